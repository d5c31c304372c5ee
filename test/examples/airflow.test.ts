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
 * the DAG's settings, its tasks, and the dependencies set between them.
 * `sdk` adds airflow.sdk, as Airflow 3 has it.
 */
function stubs(sdk: boolean): Record<string, string> {
  const core = `
import datetime as _dt
RECORD = {"dag": None, "tasks": [], "dependencies": []}

class AirflowException(Exception):
    pass

class AirflowFailException(AirflowException):
    pass

class AirflowSkipException(AirflowException):
    pass

class DAG:
    def __init__(self, **kwargs):
        RECORD["dag"] = {k: (v.isoformat() if isinstance(v, _dt.datetime) else str(v) if isinstance(v, _dt.timedelta) else v) for k, v in kwargs.items() if k != "default_args"}
        RECORD["dag"]["default_args"] = {k: str(v) for k, v in kwargs.get("default_args", {}).items()}
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

def task(task_id=None, **kwargs):
    def decorate(fn):
        def call(*args, **kw):
            made = _Task(fn, task_id or fn.__name__)
            RECORD["tasks"].append(made)
            return made
        call.function = fn
        return call
    return decorate
`;
  return {
    'airflow/__init__.py': `from airflow._core import DAG, RECORD\n`,
    'airflow/_core.py': core,
    'airflow/exceptions.py':
      'from airflow._core import AirflowException, AirflowFailException, AirflowSkipException\n',
    'airflow/decorators.py': 'from airflow._core import task\n',
    ...(sdk ? { 'airflow/sdk/__init__.py': 'from airflow._core import DAG, task\n' } : {}),
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
from airflow.exceptions import AirflowException, AirflowFailException, AirflowSkipException
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
        schedule: '@daily',
        catchup: true,
        max_active_runs: 1,
        max_active_tasks: 1,
      });
      // Catch-up from a recent night, not years of runs.
      expect(Date.parse(String(declared.dag['start_date']))).toBeGreaterThanOrEqual(
        Date.parse('2026-10-01T00:00:00Z'),
      );
      expect(await readmeCommands()).toEqual([declared.live, declared.bicycle]);
      // Today's API, not the retired v1.
      expect(declared.live.join(' ')).toContain('pipelines/traffic-signs-live.yaml');
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
});
