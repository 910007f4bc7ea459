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

The CLI runs through Airflow's SubprocessHook, which logs each line of its output as it comes:
the JSON log lines (progress, warnings, the summary) are in the task log while the run goes on.
The task declares what it writes as a Dataset (outlets), so Airflow's lineage and
dataset-scheduled DAGs see it.

Defaults: the package installed in /opt/catalog-streams (`npm install <tarball or git URL>` there,
docs/deploy.md); set CATALOG_STREAMS_PROJECT to where it is installed. The shipped pipeline writes
under that folder (out/products-nightly/, the cursor in .state/). CATALOG_STREAMS_BIN and
CATALOG_STREAMS_PIPELINE pick another bin or pipeline file, CATALOG_STREAMS_DATASET another URI
for the Dataset (e.g. s3://my-lake/catalog/products for an S3 pipeline).

Metrics: CATALOG_STREAMS_METRICS_FILE writes the Prometheus text format for node_exporter's
textfile collector (or set CATALOG_STREAMS_PUSHGATEWAY to push to a Pushgateway); the shipped
Grafana dashboard (examples/grafana/catalog-streams.json) reads them.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import timedelta

import pendulum
from airflow import DAG
from airflow.decorators import task
from airflow.exceptions import AirflowException, AirflowFailException

try:  # Airflow 3: datasets are assets, the hook is in the standard provider
    from airflow.providers.standard.hooks.subprocess import SubprocessHook
    from airflow.sdk import Asset as Dataset
except ImportError:  # Airflow 2.4 and later
    from airflow.datasets import Dataset
    from airflow.hooks.subprocess import SubprocessHook

# The project folder on the workers where the package is installed (docs/deploy.md); the shipped
# pipeline's relative outputs and cursor go under it, as the run's working directory.
PROJECT = os.environ.get("CATALOG_STREAMS_PROJECT", "/opt/catalog-streams")
CATALOG_STREAMS = os.environ.get("CATALOG_STREAMS_BIN", os.path.join(PROJECT, "node_modules/.bin/catalog-streams"))
PIPELINE_FILE = os.environ.get(
    "CATALOG_STREAMS_PIPELINE", os.path.join(PROJECT, "node_modules/catalog-streams/pipelines/products-nightly.yml")
)
# What the task writes, for lineage: the shipped pipeline's output folder.
OUTPUT_DATASET = Dataset(
    os.environ.get("CATALOG_STREAMS_DATASET", "file://" + os.path.join(PROJECT, "out/products-nightly"))
)
METRICS_FILE = os.environ.get("CATALOG_STREAMS_METRICS_FILE")
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

    @task(execution_timeout=timedelta(hours=4), outlets=[OUTPUT_DATASET])
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
                "--log-format",
                "json",
                "--progress-interval",
                "60",
            ]
            if METRICS_FILE:
                command += ["--metrics-file", METRICS_FILE]
            if PUSHGATEWAY:
                command += ["--pushgateway", PUSHGATEWAY]
            # SubprocessHook logs each line (stdout and stderr) to the task log as it comes: one JSON
            # line per event, the summary last. env=None: the worker's environment (credentials).
            result = SubprocessHook().run_command(command=command, env=None, cwd=PROJECT)
            exit_code = result.exit_code
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
