/**
 * Node duress: the node's CPU or memory usage above its threshold for `consecutiveIntervals`
 * intervals in a row (OpenSearch: 0.9 for 3 samples). Leaves duress on the first interval below both.
 */
export interface DuressOptions {
  /** Node CPU usage ratio in (0, 1]. Default 0.9. */
  readonly cpuThreshold: number;
  /** Node memory usage ratio in (0, 1]. Default 0.9. */
  readonly memoryThreshold: number;
  /** Intervals in a row, >= 1. Default 3. */
  readonly consecutiveIntervals: number;
}

export class DuressDetector {
  readonly #options: DuressOptions;
  #streak = 0;
  #resource: 'cpu' | 'memory' | undefined;

  constructor(options: DuressOptions) {
    this.#options = options;
  }

  /** Feeds one interval's node usage; returns whether the node is in duress now. */
  update(cpu: number, memory: number): boolean {
    const cpuOver = cpu > this.#options.cpuThreshold;
    const memoryOver = memory >= this.#options.memoryThreshold;
    this.#resource = cpuOver ? 'cpu' : memoryOver ? 'memory' : undefined;
    this.#streak = cpuOver || memoryOver ? this.#streak + 1 : 0;
    return this.inDuress;
  }

  /** The resource over its threshold in the last interval (cpu before memory), if any. */
  get resource(): 'cpu' | 'memory' | undefined {
    return this.#resource;
  }

  get inDuress(): boolean {
    return this.#streak >= this.#options.consecutiveIntervals;
  }
}
