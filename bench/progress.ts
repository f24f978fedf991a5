/**
 * Progress of the benchmarks (`npm run bench` and each bench alone): the experiment and its current
 * phase with the time spent, printed when a phase starts and every 10 s while it runs.
 */
import { ProgressReporter } from '../src/cli/progress-reporter.js';

const reporter = new ProgressReporter({
  label: 'bench',
  write: (line) => console.log(line),
  everyMs: 10_000,
});
let experiment: string | undefined;

/** `npm run bench` starts an experiment: later phases are shown under its name. */
export function experimentStarted(name: string): void {
  experiment = name;
  reporter.phase(name);
}

/** A bench enters one of its phases (a case, a load, a figure). */
export function benchPhase(name: string): void {
  reporter.phase(experiment === undefined ? name : `${experiment} / ${name}`);
}

/** Stops the periodic lines. */
export function progressDone(): void {
  reporter.stop();
}
