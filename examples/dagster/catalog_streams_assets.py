"""The nightly catalog extract as a Dagster asset: runs `catalog-streams run`, logs each line of
its output to the step's log as it comes, and turns its summary file (--summary-file) into the
materialization's metadata (records read and written, invalid, duration, requests, 429s, objects,
the files it wrote, the run id and the cursor), so the asset's page in Dagster shows the runs over
time and where the data is.

Defaults: run from the project folder where the package is installed (`npm install <tarball or
git URL>`, docs/deploy.md), e.g. `dagster dev -f catalog_streams_assets.py` there; or set
CATALOG_STREAMS_PROJECT to it. The bin and the shipped pipeline are found under its node_modules
(node_modules/.bin is not on PATH), and the pipeline's relative outputs go under it.

Exit codes (docs/errors.md): 0 materializes; 2 (a bad pipeline file or command) fails without
retrying; 1 fails and is retried by the RetryPolicy only when the summary's error remedy is
"retry" (network, rate limit, a lock another run holds); 129/130/143 (stopped by a signal) are
retried. A failed run publishes nothing and leaves the state cursor where it was, so a retry reads
the same window again.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile

import dagster as dg

PROJECT = os.path.abspath(os.environ.get("CATALOG_STREAMS_PROJECT", os.getcwd()))
CATALOG_STREAMS = os.environ.get("CATALOG_STREAMS_BIN", os.path.join(PROJECT, "node_modules/.bin/catalog-streams"))
PIPELINE_FILE = os.environ.get(
    "CATALOG_STREAMS_PIPELINE", os.path.join(PROJECT, "node_modules/catalog-streams/pipelines/products-nightly.yml")
)
METRICS_FILE = os.environ.get("CATALOG_STREAMS_METRICS_FILE")

# The exit codes of catalog-streams, by what the asset does with them.
SUCCESS_EXIT_CODES = {0}
FAIL_EXIT_CODES = {2}
RUN_FAILED_EXIT_CODES = {1}
RETRY_EXIT_CODES = {129, 130, 143}


def _metadata(pipeline: dict) -> dict:
    records = pipeline["records"]
    cursor = pipeline.get("cursor") or {}
    return {
        "run_id": pipeline["runId"],
        "records_read": dg.MetadataValue.int(records["read"]),
        "records_written": dg.MetadataValue.json(records["written"]),
        "invalid": dg.MetadataValue.int(records["invalid"]),
        "duration_s": dg.MetadataValue.float(pipeline["durationMs"] / 1000),
        "requests": dg.MetadataValue.int(pipeline["requests"]),
        "throttles_429": dg.MetadataValue.int(pipeline["throttles"]),
        "objects": dg.MetadataValue.int(pipeline["objects"]),
        "files": dg.MetadataValue.int(pipeline["files"]),
        "cursor": dg.MetadataValue.json(cursor),
        "warnings": dg.MetadataValue.json(pipeline.get("warnings", [])),
        # Where the run wrote (files or objects): the asset's data, for whoever reads it next.
        "outputs": dg.MetadataValue.json([o["location"] for o in pipeline["outputs"]]),
    }


def _run(context: dg.AssetExecutionContext, command: list[str]) -> int:
    """Runs the CLI from the project folder, each line of its output to the step's log as it comes."""
    with subprocess.Popen(
        command, cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    ) as process:
        for line in process.stdout:
            context.log.info(line.rstrip("\n"))
        return process.wait()


@dg.asset(
    group_name="catalog",
    description="Products changed since the last run, extracted by catalog-streams (pipelines/products-nightly.yml)",
    retry_policy=dg.RetryPolicy(max_retries=3, delay=600, backoff=dg.Backoff.EXPONENTIAL),
)
def products_nightly(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    with tempfile.TemporaryDirectory(prefix="catalog-streams-") as tmp:
        summary_file = os.path.join(tmp, "summary.json")
        command = [CATALOG_STREAMS, "run", PIPELINE_FILE, "--summary-file", summary_file, "--log-format", "json"]
        if METRICS_FILE:
            command += ["--metrics-file", METRICS_FILE]
        context.log.info(f"running {' '.join(command)}")
        exit_code = _run(context, command)
        try:
            with open(summary_file, encoding="utf-8") as f:
                summary = json.load(f)
        except (OSError, ValueError):
            summary = None

    pipelines = (summary or {}).get("pipelines", [])
    if exit_code in SUCCESS_EXIT_CODES:
        if len(pipelines) != 1:
            raise dg.Failure(f"expected one pipeline in {PIPELINE_FILE}, the summary has {len(pipelines)}", allow_retries=False)
        return dg.MaterializeResult(metadata=_metadata(pipelines[0]))
    if exit_code in FAIL_EXIT_CODES:
        raise dg.Failure(
            description=f"catalog-streams refused {PIPELINE_FILE} or the command (exit {exit_code}); fix it, a retry fails the same way",
            allow_retries=False,
        )
    if exit_code in RUN_FAILED_EXIT_CODES:
        errors = [p["error"] for p in pipelines if p.get("status") != "succeeded" and p.get("error")]
        described = "; ".join(f"{e['code']}: {e['message']}" for e in errors) or "see the step's stderr"
        retry = not errors or any(e.get("remedy") != "fix" for e in errors)
        raise dg.Failure(
            description=f"catalog-streams run failed (exit 1): {described}",
            metadata={"error_codes": dg.MetadataValue.json([e["code"] for e in errors])},
            allow_retries=retry,
        )
    if exit_code in RETRY_EXIT_CODES:
        raise dg.Failure(description=f"catalog-streams was stopped by a signal (exit {exit_code}); nothing was published")
    raise dg.Failure(description=f"catalog-streams ended with {exit_code} (killed?)")


products_nightly_job = dg.define_asset_job("products_nightly_job", selection=[products_nightly])

defs = dg.Definitions(
    assets=[products_nightly],
    jobs=[products_nightly_job],
    schedules=[
        dg.ScheduleDefinition(
            job=products_nightly_job,
            cron_schedule="30 2 * * *",
            execution_timezone="UTC",
        )
    ],
)
