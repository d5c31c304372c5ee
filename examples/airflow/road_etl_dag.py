"""Nightly road-etl runs from Airflow (2.4 and later, and 3), on one output folder.

Two independent tasks a night (see README.md beside this file):
- ``traffic_signs_live``: today's traffic-sign API (the v5 current state, which
  NDW refreshes daily) and its day-to-day changes. The state is today's, so a
  catch-up run of an earlier night skips it.
- ``bicycle``: the hourly bicycle counts of the run's data interval. A night
  cut in UTC completes the Dutch local days of the night before: the daily
  figures of a local day are whole once both nights have landed.

How road-etl's exits are used:
- 0: success. The last stdout line, the run's JSON summary, is the task's XCom.
- 1: the run failed (upstream or I/O trouble after road-etl's own retries):
  Airflow retries later. Finished work is kept; a retry continues.
- 2: bad input (a definition, a param, another upstream than the folder's data
  came from): nothing was written, and a retry would fail the same way, so the
  task fails at once (AirflowFailException), without retries.
Both tasks write one folder; road-etl refuses a second run on it (exit 1), so
the DAG runs one task at a time (max_active_tasks=1), one DAG run at a time.
Credentials come from the worker's environment (ROAD_ETL_* variables, from a
secret backend), never from this file.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import threading
from datetime import datetime, timedelta, timezone

from airflow.exceptions import AirflowException, AirflowFailException, AirflowSkipException

try:  # Airflow 3
    from airflow.sdk import DAG, task
except ImportError:  # Airflow 2.x
    from airflow import DAG
    from airflow.decorators import task

log = logging.getLogger(__name__)

# A checkout of road-etl where `npm ci` has run, and the output folder: a volume that
# every worker mounts (the folder's .state/ holds what the next night continues from).
ROAD_ETL = os.environ.get("ROAD_ETL_HOME", "/opt/road-etl")
OUTPUT = os.environ.get("ROAD_ETL_OUTPUT", "/data/road-etl")
PREFIXES = os.environ.get("ROAD_ETL_BICYCLE_PREFIXES", "GAL")
# The first night to fetch. A longer history is one run over the whole period
# (road-etl run pipelines/bicycle.yaml --param start=... --param end=...), which gives
# the same data as its nights; the DAG then starts where that run ended.
START_DATE = datetime(2026, 11, 1, tzinfo=timezone.utc)


def live_command() -> list[str]:
    """Today's traffic-sign API, its changes and extracts."""
    return [
        "npx", "road-etl", "run", "pipelines/traffic-signs-live.yaml",
        "--output", OUTPUT, "--log-format", "json",
    ]  # fmt: skip


def bicycle_command(start: str, end: str) -> list[str]:
    """The bicycle counts of [start, end), UTC (YYYY-MM-DDTHH:mm:ssZ)."""
    return [
        "npx", "road-etl", "run", "pipelines/bicycle.yaml",
        "--output", OUTPUT, "--log-format", "json",
        "--param", f"start={start}", "--param", f"end={end}", "--param", f"prefixes={PREFIXES}",
    ]  # fmt: skip


def utc(moment: datetime) -> str:
    """An instant as road-etl's timestamp params take it."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_road_etl(argv: list[str], cwd: str = ROAD_ETL) -> dict | None:
    """Runs road-etl, its logs (stderr) into the task's log; returns its JSON summary.

    Exit 2 (bad input) fails the task without retries; exit 1 fails it for a retry.
    """
    process = subprocess.Popen(
        argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    stdout: list[str] = []
    reader = threading.Thread(target=lambda: stdout.extend(process.stdout), daemon=True)
    reader.start()
    for line in process.stderr:
        log.info("%s", line.rstrip("\n"))
    code = process.wait()
    reader.join()
    lines = [line for line in stdout if line.strip()]
    summary = json.loads(lines[-1]) if lines else None
    error = (summary or {}).get("error", f"road-etl exited with {code}")
    if code == 2:
        raise AirflowFailException(f"bad input, not retried: {error}")
    if code != 0:
        raise AirflowException(f"road-etl failed (exit {code}): {error}")
    return summary


with DAG(
    dag_id="road_etl",
    schedule="@daily",
    start_date=START_DATE,
    catchup=True,
    max_active_runs=1,
    max_active_tasks=1,
    default_args={"retries": 3, "retry_delay": timedelta(minutes=15)},
) as dag:

    @task(task_id="traffic_signs_live")
    def traffic_signs_live(data_interval_end=None) -> dict | None:
        # The service serves today's state only: a night long past has nothing of its own.
        if data_interval_end is not None and data_interval_end < datetime.now(timezone.utc) - timedelta(days=2):
            raise AirflowSkipException("a past night: the current state is today's, not that night's")
        return run_road_etl(live_command())

    @task(task_id="bicycle")
    def bicycle(data_interval_start=None, data_interval_end=None) -> dict | None:
        return run_road_etl(bicycle_command(utc(data_interval_start), utc(data_interval_end)))

    # Independent: a failure of one does not hold the other back.
    traffic_signs_live()
    bicycle()
