"""Nightly catalog extract with Airflow: runs `catalog-streams run` and maps its exit code.

A Python task (not BashOperator) runs the CLI, because BashOperator retries every non-zero exit:
a broken pipeline file (exit 2) would be retried all night instead of failing at once. Here:

  exit 0            success; the run summary is returned (XCom) for downstream tasks
  exit 2            bad pipeline file or usage: fail without retrying (AirflowFailException)
  exit 1            the run failed: the summary file names the error code and its remedy
                    ("retry" for a network error, a rate limit, a lock another run holds;
                    "fix" for bad credentials, a corrupt state, a refused table delete);
                    retry only the first kind (`catalog-streams explain <code>` says which)
  exit 129/130/143  stopped by a signal (worker shutdown, pod evicted): retry
  anything else     killed (OOM: a negative return code): retry

A failed run leaves nothing half-published and the state cursor where it was, so a retry redoes
the same window. One run at a time (max_active_runs=1): two runs of one pipeline would meet at
its state lock (state.locked).

Metrics: --metrics-file writes the Prometheus text format for node_exporter's textfile collector
(or set CATALOG_STREAMS_PUSHGATEWAY to push to a Pushgateway); the shipped Grafana dashboard
(examples/grafana/catalog-streams.json) reads them.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from datetime import timedelta

import pendulum
from airflow import DAG
from airflow.decorators import task
from airflow.exceptions import AirflowException, AirflowFailException

# Where the toolkit and the pipeline file are on the workers (npm install catalog-streams).
CATALOG_STREAMS = os.environ.get("CATALOG_STREAMS_BIN", "/opt/catalog-streams/node_modules/.bin/catalog-streams")
PIPELINE_FILE = os.environ.get(
    "CATALOG_STREAMS_PIPELINE", "/opt/catalog-streams/node_modules/catalog-streams/pipelines/products-nightly.yml"
)
METRICS_FILE = os.environ.get(
    "CATALOG_STREAMS_METRICS_FILE", "/var/lib/node_exporter/textfile_collector/catalog_streams_products_nightly.prom"
)
PUSHGATEWAY = os.environ.get("CATALOG_STREAMS_PUSHGATEWAY")

# The exit codes of catalog-streams (docs/errors.md), by what the scheduler does with them.
SUCCESS_EXIT_CODES = {0}
FAIL_EXIT_CODES = {2}
RUN_FAILED_EXIT_CODES = {1}
RETRY_EXIT_CODES = {129, 130, 143}


def _read_summary(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        # exit 2 and a run that died before its end write no summary.
        return None


def _failed_errors(summary: dict | None) -> list[dict]:
    if not summary:
        return []
    return [p["error"] for p in summary.get("pipelines", []) if p.get("status") != "succeeded" and p.get("error")]


with DAG(
    dag_id="catalog_streams_products_nightly",
    description="Products changed since the last run, from the Product Catalog API into the lake",
    schedule="30 2 * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args={
        "owner": "data-platform",
        "retries": 3,
        "retry_delay": timedelta(minutes=10),
        "retry_exponential_backoff": True,
    },
    tags=["catalog-streams", "catalog"],
) as dag:

    @task(execution_timeout=timedelta(hours=4))
    def extract_products() -> dict:
        # CATALOG_BASE_URL, CATALOG_API_KEY and CATALOG_API_SECRET come from the worker's environment
        # (or an Airflow connection exported as environment variables); never from the DAG file.
        with tempfile.TemporaryDirectory(prefix="catalog-streams-") as tmp:
            summary_file = os.path.join(tmp, "summary.json")
            command = [
                CATALOG_STREAMS,
                "run",
                PIPELINE_FILE,
                "--summary-file",
                summary_file,
                "--metrics-file",
                METRICS_FILE,
                "--log-format",
                "json",
                "--progress-interval",
                "60",
            ]
            if PUSHGATEWAY:
                command += ["--pushgateway", PUSHGATEWAY]
            # stdout and stderr go to the task log: one JSON line per event, the summary last.
            exit_code = subprocess.run(command, check=False).returncode
            summary = _read_summary(summary_file)

        if exit_code in SUCCESS_EXIT_CODES:
            pipelines = (summary or {}).get("pipelines", [])
            return {
                p["pipeline"]: {
                    "run_id": p["runId"],
                    "records_read": p["records"]["read"],
                    "records_written": p["records"]["written"],
                    "invalid": p["records"]["invalid"],
                    "duration_ms": p["durationMs"],
                    "requests": p["requests"],
                    "throttles": p["throttles"],
                }
                for p in pipelines
            }
        if exit_code in FAIL_EXIT_CODES:
            raise AirflowFailException(
                f"catalog-streams refused the pipeline file or the command (exit {exit_code}); fix it, retrying will not help"
            )
        if exit_code in RUN_FAILED_EXIT_CODES:
            errors = _failed_errors(summary)
            described = "; ".join(f"{e['code']}: {e['message']}" for e in errors) or "see the task log"
            # remedy comes from the toolkit's error catalogue: "fix" fails the same way until something changes.
            if errors and all(e.get("remedy") == "fix" for e in errors):
                raise AirflowFailException(f"catalog-streams run failed (exit 1), not retried: {described}")
            raise AirflowException(f"catalog-streams run failed (exit 1), will retry: {described}")
        if exit_code in RETRY_EXIT_CODES:
            raise AirflowException(f"catalog-streams was stopped by a signal (exit {exit_code}); nothing was published, retrying")
        raise AirflowException(f"catalog-streams ended with {exit_code} (killed?); retrying")

    extract_products()
