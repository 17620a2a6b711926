// The BullMQ side of rebound's benchmarks: the workloads the Go benchmarks
// run on the native queue and asynq, run on BullMQ against the same private
// redis-server. The Go side (bench/bullmq_test.go) starts this script with
// one JSON argument, the run's settings:
//
//   {"mode": "throughput" | "lateness" | "memory" | "enqueue", "port": 6390, ...}
//
// and talks to it over lines: the script writes JSON objects with an
// "event" field to stdout ("ready", "done" with the figures, or "error"),
// and reads one word per line from stdin ("go", "stop"). Between "ready"
// and "go" the Go side reads the server's INFO (CPU, memory), and again
// after "done" and before "stop", so the figures it takes from Redis cover
// exactly the timed part and nothing of the setup or teardown. Logs go to
// stderr. Times come from performance.now() (sub-millisecond, monotonic).
'use strict';

const readline = require('node:readline');
const { performance } = require('node:perf_hooks');
const { Queue, Worker } = require('bullmq');

const cfg = JSON.parse(process.argv[2] || '{}');
const connection = { host: '127.0.0.1', port: cfg.port };

const input = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

// send writes one protocol line.
function send(event, fields) {
  process.stdout.write(JSON.stringify({ event, ...fields }) + '\n');
}

// expect waits for the next word from the Go side.
async function expect(word) {
  const { value, done } = await input.next();
  if (done || value.trim() !== word) {
    throw new Error(`want "${word}" on stdin, got ${done ? 'end of input' : JSON.stringify(value)}`);
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// cpuUs is this process's CPU time (user + system) in microseconds.
function cpuUs() {
  const u = process.cpuUsage();
  return u.user + u.system;
}

// addBulk adds jobs [0, n) made by make(i) in chunks of the given size, one
// chunk at a time.
async function addBulk(queue, n, chunk, make) {
  for (let lo = 0; lo < n; lo += chunk) {
    const jobs = [];
    for (let i = lo; i < Math.min(n, lo + chunk); i++) {
      jobs.push(make(i));
    }
    await queue.addBulk(jobs);
  }
}

// retryOpts are the options of a job that may run twice: it fails once and
// succeeds on its retry after delayMs (BullMQ's attempts count every run,
// as MaxAttempts does in rebound).
function retryOpts(attempts, delayMs) {
  return { attempts, backoff: { type: 'fixed', delay: delayMs } };
}

// latch resolves after count calls of its arrive method.
function latch(count) {
  let arrive;
  const done = new Promise((resolve) => {
    let left = count;
    arrive = () => {
      left--;
      if (left === 0) {
        resolve();
      }
      return left;
    };
  });
  return { done, arrive: () => arrive() };
}

const dependencyDown = 'dependency down';

// throughput: cfg.jobs jobs fail once and succeed on their retry after
// cfg.delayMs, cfg.concurrency handlers; the clock runs from the worker's
// start to the last success (the enqueue is outside it).
async function throughput() {
  const name = 'throughput';
  const queue = new Queue(name, { connection });
  await addBulk(queue, cfg.jobs, 1000, () => ({ name, data: 'x', opts: retryOpts(2, cfg.delayMs) }));
  const ok = latch(cfg.jobs);
  const worker = new Worker(
    name,
    async (job) => {
      if (job.attemptsMade === 0) {
        throw new Error(dependencyDown);
      }
      ok.arrive();
    },
    { connection, concurrency: cfg.concurrency, autorun: false },
  );
  worker.on('error', (err) => console.error('worker:', err));
  await worker.waitUntilReady();
  send('ready');
  await expect('go');
  const cpu0 = cpuUs();
  const t0 = performance.now();
  worker.run().catch((err) => console.error('worker run:', err));
  await ok.done;
  const seconds = (performance.now() - t0) / 1000;
  send('done', { seconds, cpu_us: cpuUs() - cpu0 });
  await expect('stop');
  await worker.close();
  await queue.close();
}

// lateness: cfg.jobs jobs arrive on the schedule of the Go benchmarks (job
// i due i*spread/jobs after the start, checked every 5 ms), fail their first
// attempt and start their retry cfg.delayMs later; the figure is, per job,
// how late the retry started against the end of the failed attempt plus
// the delay.
async function lateness() {
  const name = 'lateness';
  const queue = new Queue(name, { connection });
  const ended = new Float64Array(cfg.jobs).fill(NaN);
  const started = new Float64Array(cfg.jobs).fill(NaN);
  const all = latch(cfg.jobs);
  const worker = new Worker(
    name,
    async (job) => {
      const now = performance.now();
      const i = job.data.i;
      if (job.attemptsMade === 0) {
        ended[i] = performance.now();
        throw new Error(dependencyDown);
      }
      if (Number.isNaN(started[i])) {
        started[i] = now;
        all.arrive();
      }
    },
    { connection, concurrency: cfg.concurrency },
  );
  worker.on('error', (err) => console.error('worker:', err));
  await worker.waitUntilReady();
  send('ready');
  await expect('go');
  const opts = retryOpts(2, cfg.delayMs);
  const step = cfg.spreadMs / cfg.jobs;
  const t0 = performance.now();
  for (let next = 0; next < cfg.jobs; ) {
    const due = Math.min(cfg.jobs, Math.floor((performance.now() - t0) / step) + 1);
    if (due > next) {
      const jobs = [];
      for (let i = next; i < due; i++) {
        jobs.push({ name, data: { i }, opts });
      }
      await queue.addBulk(jobs);
      next = due;
    }
    await sleep(5);
  }
  await all.done;
  const lateMs = Array.from(started, (s, i) => s - ended[i] - cfg.delayMs);
  send('done', { late_ms: lateMs });
  await expect('stop');
  await worker.close();
  await queue.close();
}

// memory: cfg.jobs jobs with cfg.payload (JSON) fail once and wait an hour
// for their retry; "done" comes once all of them are delayed and the worker
// has closed, so the Go side's INFO memory reading sees only the jobs.
async function memory() {
  const name = 'memory';
  const queue = new Queue(name, { connection });
  const data = JSON.parse(cfg.payload);
  const opts = retryOpts(3, 3600 * 1000);
  if (cfg.stackTraceLimit !== undefined) {
    opts.stackTraceLimit = cfg.stackTraceLimit;
  }
  const worker = new Worker(
    name,
    async () => {
      throw new Error(dependencyDown);
    },
    { connection, concurrency: 50, autorun: false },
  );
  worker.on('error', (err) => console.error('worker:', err));
  await worker.waitUntilReady();
  send('ready');
  await expect('go');
  await addBulk(queue, cfg.jobs, 1000, () => ({ name, data, opts }));
  worker.run().catch((err) => console.error('worker run:', err));
  const deadline = performance.now() + 120000;
  while ((await queue.getDelayedCount()) < cfg.jobs) {
    if (performance.now() > deadline) {
      throw new Error(`fewer than ${cfg.jobs} jobs delayed after 120 s`);
    }
    await sleep(20);
  }
  await worker.close();
  send('done', {});
  await expect('stop');
  await queue.close();
}

// enqueue: cfg.jobs jobs with cfg.payload (JSON) and the options of a job
// that may retry, added with addBulk in chunks of cfg.chunk (cfg.how
// "addbulk") or with add from cfg.parallel concurrent loops ("add").
async function enqueue() {
  const name = 'enqueue';
  const queue = new Queue(name, { connection });
  await queue.waitUntilReady();
  const data = JSON.parse(cfg.payload);
  const opts = retryOpts(2, 50);
  send('ready');
  await expect('go');
  const cpu0 = cpuUs();
  const t0 = performance.now();
  if (cfg.how === 'addbulk') {
    await addBulk(queue, cfg.jobs, cfg.chunk, () => ({ name, data, opts }));
  } else if (cfg.how === 'add') {
    let next = 0;
    const loop = async () => {
      while (next < cfg.jobs) {
        next++;
        await queue.add(name, data, opts);
      }
    };
    await Promise.all(Array.from({ length: cfg.parallel }, loop));
  } else {
    throw new Error(`unknown enqueue mode ${JSON.stringify(cfg.how)}, want "add" or "addbulk"`);
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuUs() - cpu0;
  const count = await queue.getWaitingCount();
  if (count !== cfg.jobs) {
    throw new Error(`${count} jobs waiting after enqueueing ${cfg.jobs}`);
  }
  send('done', { seconds, cpu_us: cpu });
  await expect('stop');
  await queue.close();
}

const modes = { throughput, lateness, memory, enqueue };

async function main() {
  const mode = modes[cfg.mode];
  if (!mode) {
    throw new Error(`unknown mode ${JSON.stringify(cfg.mode)}, want one of ${Object.keys(modes).join(', ')}`);
  }
  if (!cfg.port) {
    throw new Error('no redis port in the settings');
  }
  await mode();
}

main().then(
  () => process.exit(0),
  (err) => {
    send('error', { error: String((err && err.stack) || err) });
    process.exit(1);
  },
);
