import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { useSimulator } from '../helpers/simulator.js';
import { testDir, writeFiles } from '../helpers/tmp.js';

const run = promisify(execFile);
const DAG = join(ROOT, 'examples', 'airflow', 'road_etl_dag.py');
const PYTHON = await run('python3', ['--version']).then(
  () => true,
  () => false,
);
if (!PYTHON) console.warn('python3 is not installed: the Airflow DAG tests are skipped');

const simulator = await useSimulator({
  seed: 9,
  signs: { signs: 200 },
  bicycle: { locations: 12 },
});

/**
 * Just enough of Airflow to import the DAG file and record what it declares:
 * the DAG's settings, its tasks, the dependencies set between them, XComs
 * pushed, the connection it reads. `sdk` adds airflow.sdk, as Airflow 3 has it
 * (its exceptions in airflow.sdk.exceptions); without it the DAG takes Airflow
 * 2's modules. CronDataIntervalTimetable gives the data intervals Airflow's own
 * (airflow/timetables/interval.py) gives for a daily cron in UTC: a scheduled
 * run the day after the last one, a manual run the last whole day before it.
 */
function stubs(sdk: boolean): Record<string, string> {
  const core = `
import datetime as _dt, os as _os
RECORD = {"dag": None, "tasks": [], "dependencies": [], "xcom": []}
_DAY = _dt.timedelta(days=1)

class AirflowException(Exception):
    pass

class AirflowFailException(AirflowException):
    pass

class AirflowSkipException(AirflowException):
    pass

class CronDataIntervalTimetable:
    def __init__(self, cron, timezone):
        self.expression = {"@daily": "0 0 * * *"}.get(cron, cron)
        self.timezone = timezone
    def describe(self):
        return {"timetable": "CronDataIntervalTimetable", "expression": self.expression, "timezone": str(self.timezone)}
    def _check(self):
        assert self.expression == "0 0 * * *" and str(self.timezone) == "UTC", "the stub knows a daily cron in UTC only"
    def _align_to_prev(self, t):
        return t.replace(hour=0, minute=0, second=0, microsecond=0)
    def _align_to_next(self, t):
        prev = self._align_to_prev(t)
        return t if prev == t else prev + _DAY
    def first_interval(self, earliest):
        # next_dagrun_info with catchup: start = _align_to_next(earliest), end = _get_next(start)
        self._check()
        start = self._align_to_next(earliest)
        return start, start + _DAY
    def infer_manual_data_interval(self, run_after):
        # end = _align_to_prev(run_after); start = _get_prev(end)
        self._check()
        end = self._align_to_prev(run_after)
        return end - _DAY, end

class _Ti:
    def xcom_push(self, key, value):
        RECORD["xcom"].append({"key": key, "value": value})

def get_current_context():
    return {"ti": _Ti()}

class _Connection:
    def __init__(self, login, password):
        self.login, self.password = login, password

def get_connection(conn_id):
    if _os.environ.get("STUB_CONNECTION") != conn_id:
        raise AirflowException(f"The conn_id \`{conn_id}\` isn't defined")
    return _Connection(_os.environ.get("STUB_LOGIN"), _os.environ.get("STUB_PASSWORD"))

class Connection:
    get = staticmethod(get_connection)

class BaseHook:
    get_connection = staticmethod(get_connection)

def _plain(v):
    if isinstance(v, _dt.datetime):
        return v.isoformat()
    if isinstance(v, _dt.timedelta):
        return str(v)
    if isinstance(v, CronDataIntervalTimetable):
        return v.describe()
    return v

class DAG:
    def __init__(self, **kwargs):
        RECORD["dag"] = {k: _plain(v) for k, v in kwargs.items() if k != "default_args"}
        RECORD["dag"]["default_args"] = {k: str(v) for k, v in kwargs.get("default_args", {}).items()}
        RECORD["timetable"] = kwargs.get("schedule")
    def __enter__(self):
        return self
    def __exit__(self, *args):
        return False

class _Task:
    def __init__(self, fn, task_id):
        self.fn, self.task_id = fn, task_id
    def __rshift__(self, other):
        RECORD["dependencies"].append([self.task_id, other.task_id])
        return other
    def __lshift__(self, other):
        RECORD["dependencies"].append([other.task_id, self.task_id])
        return other

TASKS = {}

def task(task_id=None, **kwargs):
    def decorate(fn):
        TASKS[task_id or fn.__name__] = fn
        def call(*args, **kw):
            made = _Task(fn, task_id or fn.__name__)
            RECORD["tasks"].append(made)
            return made
        call.function = fn
        return call
    return decorate
`;
  const exceptions =
    'from airflow._core import AirflowException, AirflowFailException, AirflowSkipException\n';
  return {
    'airflow/__init__.py': `from airflow._core import DAG, RECORD, TASKS\n`,
    'airflow/_core.py': core,
    ...(sdk
      ? {
          'airflow/sdk/__init__.py':
            'from airflow._core import DAG, Connection, CronDataIntervalTimetable, get_current_context, task\n',
          'airflow/sdk/exceptions.py': exceptions,
        }
      : {
          'airflow/exceptions.py': exceptions,
          'airflow/decorators.py': 'from airflow._core import task\n',
          'airflow/hooks/__init__.py': '',
          'airflow/hooks/base.py': 'from airflow._core import BaseHook\n',
          'airflow/operators/__init__.py': '',
          'airflow/operators/python.py': 'from airflow._core import get_current_context\n',
          'airflow/timetables/__init__.py': '',
          'airflow/timetables/interval.py': 'from airflow._core import CronDataIntervalTimetable\n',
        }),
  };
}

/** Imports the DAG with the stubs and runs `body` (Python) after it; resolves to what it prints. */
async function withDag(
  sdk: boolean,
  body: string,
  env: Record<string, string> = {},
): Promise<unknown> {
  const dir = await testDir();
  await writeFiles(dir, stubs(sdk));
  const script = `
import importlib.util, json, sys
sys.path.insert(0, ${JSON.stringify(dir)})
import airflow
spec = importlib.util.spec_from_file_location("road_etl_dag", ${JSON.stringify(DAG)})
dag = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dag)
from airflow._core import AirflowException, AirflowFailException, AirflowSkipException
${body}
`;
  const { stdout } = await run('python3', ['-c', script], {
    // No __pycache__ beside the example.
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', ...env },
    maxBuffer: 1 << 24,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

const DECLARED = `print(json.dumps({
  "dag": airflow.RECORD["dag"],
  "tasks": [t.task_id for t in airflow.RECORD["tasks"]],
  "dependencies": airflow.RECORD["dependencies"],
  "live": dag.live_command(),
  "bicycle": dag.bicycle_command("2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z"),
}))`;

/** The commands of the example's README (its sh block), as argument lists. */
async function readmeCommands(): Promise<string[][]> {
  const text = await readFile(join(ROOT, 'examples', 'airflow', 'README.md'), 'utf8');
  const block = /```sh\n([\s\S]*?)```/.exec(text)![1]!;
  return block
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => l.trim().split(/\s+/));
}

describe.skipIf(!PYTHON)('the Airflow example (examples/airflow)', () => {
  it('compiles', async () => {
    const compiled = join(await testDir(), 'dag.pyc');
    await expect(
      run('python3', [
        '-c',
        'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)',
        DAG,
        compiled,
      ]),
    ).resolves.toBeDefined();
  });

  it.each([
    ['Airflow 2.x', false],
    ['Airflow 3', true],
  ])(
    'declares on %s two independent tasks, a bounded catch-up, and the README’s commands',
    async (_name, sdk) => {
      const declared = (await withDag(sdk, DECLARED)) as {
        dag: Record<string, unknown>;
        tasks: string[];
        dependencies: string[][];
        live: string[];
        bicycle: string[];
      };
      expect(declared.tasks.sort()).toEqual(['bicycle', 'traffic_signs_live']);
      expect(declared.dependencies).toEqual([]);
      expect(declared.dag).toMatchObject({
        // A data interval per run (Airflow 3's @daily has none): see the schedule test.
        schedule: {
          timetable: 'CronDataIntervalTimetable',
          expression: '0 0 * * *',
          timezone: 'UTC',
        },
        catchup: true,
        max_active_runs: 1,
        max_active_tasks: 1,
      });
      // Catch-up from a recent night, not years of runs.
      expect(Date.parse(String(declared.dag['start_date']))).toBeGreaterThanOrEqual(
        Date.parse('2026-10-01T00:00:00Z'),
      );
      expect(await readmeCommands()).toEqual([declared.live, declared.bicycle]);
      // Today's API, not the retired v1; the checkout's own bin, never a package from a registry.
      expect(declared.live.join(' ')).toContain('pipelines/traffic-signs-live.yaml');
      for (const command of [declared.live, declared.bicycle])
        expect(command.slice(0, 2)).toEqual(['node', '/opt/road-etl/bin/road-etl.js']);
    },
  );

  it('runs the commands: the summary is the XCom, exit 2 fails without retry, exit 1 fails for one', async () => {
    const output = await testDir();
    const env = { ...simulator.env, ROAD_ETL_OUTPUT: output, ROAD_ETL_HOME: ROOT };
    const results = (await withDag(
      false,
      `
out = {}
def outcome(argv):
    try:
        return {"summary": dag.run_road_etl(argv)}
    except AirflowFailException as e:
        return {"fail": str(e)}
    except AirflowException as e:
        return {"retry": str(e)}
out["live"] = outcome(dag.live_command())
out["bicycle"] = outcome(dag.bicycle_command("2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z"))
out["bad"] = outcome(dag.live_command() + ["--param", "nope=1"])
import os
os.environ["ROAD_ETL_SIGNS_V5_URL"] = "http://127.0.0.1:9"
out["down"] = outcome(dag.live_command())
print(json.dumps(out))
`,
      env,
    )) as Record<string, { summary?: Record<string, unknown>; fail?: string; retry?: string }>;
    expect(results['live']!.summary).toMatchObject({ status: 'succeeded', exit_code: 0 });
    expect(results['bicycle']!.summary).toMatchObject({
      status: 'succeeded',
      pipeline: 'bicycle',
      output,
    });
    expect(results['bad']!.fail).toMatch(/bad input, not retried: .*nope/);
    expect(results['down']!.retry).toMatch(/road-etl failed \(exit 1\)/);
  }, 120_000);

  it.each([
    ['Airflow 2.x', false],
    ['Airflow 3', true],
  ])(
    'gives on %s every run a whole UTC day: the scheduled night, and for a manual trigger the day before',
    async (_name, sdk) => {
      const nights = (await withDag(
        sdk,
        `
from datetime import datetime, timezone
asked = []
dag.run_road_etl = lambda argv: asked.append([a for a in argv if a.startswith(("start=", "end="))])
bicycle = airflow.TASKS["bicycle"]
timetable = airflow.RECORD["timetable"]
start, end = timetable.first_interval(dag.START_DATE)
bicycle(data_interval_start=start, data_interval_end=end)
start, end = timetable.infer_manual_data_interval(datetime(2026, 11, 26, 14, 33, tzinfo=timezone.utc))
bicycle(data_interval_start=start, data_interval_end=end)
# Airflow 3's @daily (a trigger timetable): a run's interval is the moment it runs.
try:
    moment = datetime(2026, 11, 26, 14, 33, tzinfo=timezone.utc)
    bicycle(data_interval_start=moment, data_interval_end=moment)
    trigger = "ran"
except AirflowFailException as e:
    trigger = str(e)
print(json.dumps({"asked": asked, "trigger": trigger}))
`,
      )) as { asked: string[][]; trigger: string };
      expect(nights.asked).toEqual([
        ['start=2026-11-01T00:00:00Z', 'end=2026-11-02T00:00:00Z'],
        // Later nights go on from where the folder's counts end.
        ['end=2026-11-26T00:00:00Z'],
      ]);
      expect(nights.trigger).toMatch(/^setup: the run's data interval is not a night/);
    },
  );

  it('fails at once, not retried, on a worker without Node.js or without road-etl', async () => {
    const failures = (await withDag(
      true,
      `
out = []
for home, node in [("/nonexistent/road-etl", "node"), (dag.ROAD_ETL, "no-such-node-binary")]:
    dag.ROAD_ETL, dag.NODE = home, node
    try:
        dag.run_road_etl(dag.live_command())
        out.append("ran")
    except AirflowFailException as e:
        out.append("fail: " + str(e))
    except AirflowException as e:
        out.append("retry: " + str(e))
print(json.dumps(out))
`,
      { ROAD_ETL_HOME: ROOT },
    )) as string[];
    expect(failures[0]).toMatch(
      /^fail: setup: \/nonexistent\/road-etl\/bin\/road-etl.js does not exist/,
    );
    expect(failures[1]).toMatch(
      /^fail: setup: Node.js \(no-such-node-binary\) is not on this worker's PATH/,
    );
  });

  it('pushes the summary to XCom on failure too, keeps road-etl’s log levels, and takes the NDW account from a Connection', async () => {
    const output = await testDir();
    const { ROAD_ETL_USERNAME: login, ROAD_ETL_PASSWORD: password, ...env } = simulator.env;
    const results = (await withDag(
      true,
      `
import logging
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append([record.levelname, record.getMessage()])
logging.getLogger(dag.__name__).addHandler(Keep())
logging.getLogger(dag.__name__).setLevel(logging.DEBUG)
out = {}
out["bicycle"] = dag.run_road_etl(dag.bicycle_command("2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z"))
import os
os.environ["ROAD_ETL_SIGNS_V5_URL"] = "http://127.0.0.1:9"
try:
    dag.run_road_etl(dag.live_command())
except AirflowException as e:
    out["down"] = str(e)
out["xcom"] = airflow.RECORD["xcom"]
out["levels"] = sorted({level for level, _ in records})
out["errors"] = [m for level, m in records if level == "ERROR"]
print(json.dumps(out))
`,
      {
        ...env,
        ROAD_ETL_OUTPUT: output,
        ROAD_ETL_HOME: ROOT,
        STUB_CONNECTION: 'road_etl_ndw',
        STUB_LOGIN: login,
        STUB_PASSWORD: password,
      },
    )) as {
      bicycle: Record<string, unknown>;
      down: string;
      xcom: { key: string; value: Record<string, unknown> }[];
      levels: string[];
      errors: string[];
    };
    // The account came from the Connection only: the run's environment has none.
    expect(results.bicycle).toMatchObject({ status: 'succeeded', pipeline: 'bicycle' });
    expect(results.down).toMatch(/road-etl failed \(exit 1\)/);
    expect(results.xcom.map((x) => [x.key, x.value['status'], x.value['pipeline']])).toEqual([
      ['summary', 'succeeded', 'bicycle'],
      ['summary', 'failed', 'traffic_signs_live'],
    ]);
    expect(results.xcom[1]!.value['exit_code']).toBe(1);
    expect(results.levels).toEqual(expect.arrayContaining(['INFO', 'ERROR']));
    expect(results.errors.join('\n')).toMatch(/signs_live failed/);
  }, 120_000);
});
