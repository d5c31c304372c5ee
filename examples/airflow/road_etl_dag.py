"""Nightly road-etl runs from Airflow: one task per pipeline, on one output folder.

Expectations (see ../../README.md, "Running from CI or Airflow"):
- Reruns are idempotent: a task that is retried, cleared or backfilled lands
  nothing twice (the traffic-sign feed resumes from its checkpoint; a bicycle
  period replaces that period's rows).
- Exit codes: 0 success; 1 the run failed (upstream or I/O trouble after
  retries): retrying later can help; 2 bad input (definition, params): fix it,
  a retry will fail the same way, and nothing was written.
- The last line on stdout is a one-line JSON summary: BashOperator pushes it to
  XCom (do_xcom_push) for downstream tasks.
- Two runs on one output folder refuse each other (lock): the tasks are chained
  and max_active_runs is 1.
Credentials come from the environment (an Airflow connection or secret backend
exported as ROAD_ETL_* variables), never from files.
"""

from datetime import datetime, timedelta

from airflow import DAG
from airflow.operators.bash import BashOperator

ROAD_ETL = "/opt/road-etl"  # a checkout where `npm ci` has run
OUTPUT = "/data/road-etl"

# Airflow's data interval as the UTC timestamps road-etl expects (YYYY-MM-DDTHH:mm:ssZ).
START = "{{ data_interval_start.strftime('%Y-%m-%dT%H:%M:%SZ') }}"
END = "{{ data_interval_end.strftime('%Y-%m-%dT%H:%M:%SZ') }}"

with DAG(
    dag_id="road_etl",
    schedule="@daily",
    start_date=datetime(2025, 1, 1),
    catchup=True,
    max_active_runs=1,
    default_args={"retries": 3, "retry_delay": timedelta(minutes=15)},
) as dag:
    traffic_signs = BashOperator(
        task_id="traffic_signs",
        bash_command=f"cd {ROAD_ETL} && npx road-etl run pipelines/traffic-signs.yaml --output {OUTPUT} --log-format json",
        append_env=True,  # ROAD_ETL_SIGNS_URL from the worker's environment
        do_xcom_push=True,
    )

    bicycle = BashOperator(
        task_id="bicycle",
        bash_command=(
            f"cd {ROAD_ETL} && npx road-etl run pipelines/bicycle.yaml --output {OUTPUT} --log-format json"
            f" --param start={START} --param end={END} --param prefixes=GAL"
        ),
        append_env=True,  # ROAD_ETL_BICYCLE_URL, ROAD_ETL_AUTH_URL, ROAD_ETL_USERNAME, ROAD_ETL_PASSWORD
        do_xcom_push=True,
    )

    traffic_signs >> bicycle
