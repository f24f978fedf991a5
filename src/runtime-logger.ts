/**
 * What the runtime logs through: the part of a pino logger it calls (`info`, `warn`, `error`, each
 * with an optional object of fields first). A pino logger fits as it is; so does any object with
 * these methods. The runtime entry does not load pino: without `options.logger` it logs nothing.
 */
export interface RuntimeLogger {
  info(fields: object, message?: string): void;
  info(message: string): void;
  warn(fields: object, message?: string): void;
  warn(message: string): void;
  error(fields: object, message?: string): void;
  error(message: string): void;
}

const ignore = (): void => {};

/** The logger used when none is given: drops everything. */
export const SILENT_LOGGER: RuntimeLogger = Object.freeze({ info: ignore, warn: ignore, error: ignore });
