"""Nightly road-etl runs from Airflow (2.4 and later, and 3), on one output folder.

Two independent tasks a night (see README.md beside this file):
- ``traffic_signs_live``: today's traffic-sign API (the v5 current state, which
  NDW refreshes daily) and its day-to-day changes. The state is today's, so a
  catch-up run of an earlier night skips it.
- ``bicycle``: the hourly bicycle counts of the run's data interval, one whole
  UTC day. A night cut in UTC completes the Dutch local days of the night
  before: the daily figures of a local day are whole once both nights have landed.

The schedule is a data-interval timetable (CronDataIntervalTimetable), so that
every run, scheduled or manual, covers one whole day: a scheduled run the day
that has just ended, a manual run (or ``airflow dags test road_etl D``) the last
whole day before its date. Airflow 3's ``@daily`` is a trigger timetable
whose runs have no interval (start equals end); a run without a whole day fails
at once, as a setup mistake.

How road-etl's exits are used:
- 0: success. The last stdout line, the run's JSON summary, is the task's
  return value (XCom ``return_value``) and XCom ``summary``.
- 1: the run failed (upstream or I/O trouble after road-etl's own retries):
  Airflow retries later. Finished work is kept; a retry continues. The summary
  is in XCom ``summary`` all the same.
- 2: bad input (a definition, a param, another upstream than the folder's data
  came from): nothing was written, and a retry would fail the same way, so the
  task fails at once (AirflowFailException), without retries.
A worker without Node.js or without road-etl where ROAD_ETL_HOME says is a
setup mistake: the task fails at once, without retries.
Both tasks write one folder, which one run holds at a time: the DAG runs one
task at a time (max_active_tasks=1) and one DAG run at a time, and a run that
meets another anyway (a backfill with more active runs, a manual run) waits
for its turn (--wait-for-lock) instead of failing.
Credentials come from an Airflow Connection (``road_etl_ndw``: login and
password) or the worker's environment (ROAD_ETL_* variables, from a secret
backend), never from this file.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import threading
from datetime import datetime, timedelta, timezone

try:  # Airflow 3
    from airflow.sdk import DAG, Connection, CronDataIntervalTimetable, get_current_context, task
    from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

    get_connection = Connection.get
except ImportError:  # Airflow 2.x
    from airflow import DAG
    from airflow.decorators import task
    from airflow.exceptions import AirflowException, AirflowFailException, AirflowSkipException
    from airflow.hooks.base import BaseHook
    from airflow.operators.python import get_current_context
    from airflow.timetables.interval import CronDataIntervalTimetable

    get_connection = BaseHook.get_connection

log = logging.getLogger(__name__)

# A checkout of road-etl where `npm ci` has run (its own bin is what runs: never a
# package fetched from a registry), Node.js (20.19 or later) on the workers, and the
# output folder, which holds what the next night continues from (.state/): on workers
# whose disks do not survive, a folder in object storage (s3://BUCKET/PREFIX with the
# AWS variables, az://CONTAINER/PREFIX with AZURE_STORAGE_CONNECTION_STRING), or a
# volume that every worker mounts.
ROAD_ETL = os.environ.get("ROAD_ETL_HOME", "/opt/road-etl")
NODE = os.environ.get("ROAD_ETL_NODE", "node")
OUTPUT = os.environ.get("ROAD_ETL_OUTPUT", "/data/road-etl")
PREFIXES = os.environ.get("ROAD_ETL_BICYCLE_PREFIXES", "GAL")
# A run that finds the folder held by another (a backfill with more than one active
# run, a manual run beside the schedule) waits this many seconds for its turn.
WAIT_FOR_LOCK = "3600"
# The NDW account of the bicycle API: an Airflow Connection (login, password) of this id,
# given to road-etl as ROAD_ETL_USERNAME and ROAD_ETL_PASSWORD; without one, the worker's
# own environment (from a secret backend) must have them.
CONNECTION_ID = os.environ.get("ROAD_ETL_CONNECTION", "road_etl_ndw")
# The first night to fetch. A longer history is one run over the whole period
# (road-etl run pipelines/bicycle.yaml --param start=... --param end=...), which gives
# the same data as its nights; the DAG then starts where that run ended.
START_DATE = datetime(2026, 11, 1, tzinfo=timezone.utc)

# road-etl's log levels, as the task log has them.
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}


def road_etl(*args: str) -> list[str]:
    """road-etl's own bin in ROAD_ETL_HOME, run by Node.js."""
    return [NODE, os.path.join(ROAD_ETL, "bin", "road-etl.js"), *args]


def live_command() -> list[str]:
    """Today's traffic-sign API, its changes and extracts."""
    return road_etl(
        "run", os.path.join(ROAD_ETL, "pipelines", "traffic-signs-live.yaml"),
        "--output", OUTPUT, "--log-format", "json", "--wait-for-lock", WAIT_FOR_LOCK,
    )  # fmt: skip


def bicycle_command(start: str | None, end: str) -> list[str]:
    """The bicycle counts up to end, UTC (YYYY-MM-DDTHH:mm:ssZ): from start, or, without it,
    from where the folder's counts end, so that a night that failed for good is fetched by the
    next one (road-etl also asks again for the hours missing in the week before)."""
    return road_etl(
        "run", os.path.join(ROAD_ETL, "pipelines", "bicycle.yaml"),
        "--output", OUTPUT, "--log-format", "json", "--wait-for-lock", WAIT_FOR_LOCK,
        *(["--param", f"start={start}"] if start else []),
        "--param", f"end={end}", "--param", f"prefixes={PREFIXES}",
    )  # fmt: skip


def utc(moment: datetime) -> str:
    """An instant as road-etl's timestamp params take it."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def night(start: datetime | None, end: datetime | None) -> tuple[str, str]:
    """The run's data interval as road-etl's start and end; a run without one is a setup mistake."""
    if start is None or end is None or not start < end:
        raise AirflowFailException(
            f"setup: the run's data interval is not a night ({start} to {end}): schedule the DAG "
            "with CronDataIntervalTimetable, as this file does (Airflow 3's @daily gives runs no interval)"
        )
    return utc(start), utc(end)


def check_setup(argv: list[str]) -> None:
    """Node.js and road-etl where the command says, or the task fails at once (not retried)."""
    if shutil.which(argv[0]) is None:
        raise AirflowFailException(f"setup: Node.js ({argv[0]}) is not on this worker's PATH (set ROAD_ETL_NODE)")
    for path in (argv[1], argv[3]):  # the bin and the pipeline
        if not os.path.isfile(path):
            raise AirflowFailException(
                f"setup: {path} does not exist: ROAD_ETL_HOME ({ROAD_ETL}) must be a checkout of road-etl where `npm ci` has run"
            )


def log_line(line: str) -> None:
    """A line of road-etl's JSON log, at its own level in the task's log."""
    try:
        record = json.loads(line)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        log.info("%s", line)
        return
    level = LEVELS.get(str(record.get("level")), logging.INFO)
    log.log(level, "%s: %s", record.get("event", "road-etl"), record.get("message", line))


def credentials() -> dict[str, str]:
    """ROAD_ETL_USERNAME and ROAD_ETL_PASSWORD from the Airflow Connection, when there is one."""
    try:
        connection = get_connection(CONNECTION_ID)
    except Exception:  # no such connection: the worker's environment has them, or the run says what is missing
        return {}
    found = {"ROAD_ETL_USERNAME": connection.login, "ROAD_ETL_PASSWORD": connection.password}
    return {name: value for name, value in found.items() if value}


def push_summary(summary: dict | None) -> None:
    """The run's summary as the task's XCom `summary`, whatever the run's end."""
    if summary is None:
        return
    try:
        context = get_current_context()
    except Exception:  # outside a running task (a test, a shell): nowhere to push
        return
    context["ti"].xcom_push(key="summary", value=summary)


def run_road_etl(argv: list[str]) -> dict | None:
    """Runs road-etl, its logs (stderr) into the task's log; returns its JSON summary.

    Exit 2 (bad input) fails the task without retries; exit 1 fails it for a retry.
    """
    check_setup(argv)
    process = subprocess.Popen(
        argv,
        cwd=ROAD_ETL,
        env={**os.environ, **credentials()},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout: list[str] = []
    reader = threading.Thread(target=lambda: stdout.extend(process.stdout), daemon=True)
    reader.start()
    for line in process.stderr:
        log_line(line.rstrip("\n"))
    code = process.wait()
    reader.join()
    lines = [line for line in stdout if line.strip()]
    summary = json.loads(lines[-1]) if lines else None
    push_summary(summary)
    error = (summary or {}).get("error", f"road-etl exited with {code}")
    if code == 2:
        raise AirflowFailException(f"bad input, not retried: {error}")
    if code != 0:
        raise AirflowException(f"road-etl failed (exit {code}): {error}")
    return summary


with DAG(
    dag_id="road_etl",
    # Each run covers one whole UTC day: scheduled, the day just ended; manual, the day before.
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
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
        start, end = night(data_interval_start, data_interval_end)
        # The DAG's first night starts the folder's counts; every later one goes on from them.
        first = data_interval_start == START_DATE
        return run_road_etl(bicycle_command(start if first else None, end))

    # Independent: a failure of one does not hold the other back.
    traffic_signs_live()
    bicycle()
