import createDebug from 'debug';
import { escapeForTerminal, jsonForTerminal } from '../model/terminal-text.js';
import type { Logger } from '../model/types.js';

/** The library's own namespace: `DEBUG=memory-mounter:*` shows its lines. */
const LIBRARY_NAMESPACE = 'memory-mounter';

/**
 * The default logger: the `debug` package, one namespace per level (`memory-mounter:warn`, ...),
 * so `DEBUG=memory-mounter:*` shows everything and `DEBUG=memory-mounter:warn,memory-mounter:error`
 * only what needs attention. Fields are appended as JSON so a line can be grepped by store or path.
 *
 * A host's namespace (`debugLogger('my-worker')`) adds its own: each line goes to
 * `my-worker:<level>` when that is enabled, else to `memory-mounter:<level>` when that is, so
 * `DEBUG=my-worker:*` and `DEBUG=memory-mounter:*` both show every line that logger is given
 * (the library's and the host's own), and with both enabled each line is printed once, under the
 * host's namespace. Without the fallback a host's logger would silence the namespace every doc
 * tells operators to set.
 *
 * The message is passed as an argument, never as `debug`'s format string, and made safe for a
 * terminal (`escapeForTerminal`; the fields as JSON with the same characters escaped).
 */
export function debugLogger(namespace = LIBRARY_NAMESPACE): Logger {
  const channel = (level: string) => {
    const own = createDebug(`${namespace}:${level}`);
    const library = namespace === LIBRARY_NAMESPACE ? null : createDebug(`${LIBRARY_NAMESPACE}:${level}`);
    return (msg: string, fields?: Record<string, unknown>) => {
      const d = own.enabled ? own : library?.enabled ? library : null;
      // Never the message as `debug`'s format string (a `%o` in a path would eat an argument), and
      // nothing in it or its fields a terminal acts on (terminal-text.ts).
      if (d) d('%s', fields ? `${escapeForTerminal(msg)} ${jsonForTerminal(fields)}` : escapeForTerminal(msg));
    };
  };
  return { debug: channel('debug'), info: channel('info'), warn: channel('warn'), error: channel('error') };
}

/**
 * A logger that takes its fields first and the message second, as pino and bunyan do:
 * `logger.info({ memory_store_id, path }, 'mounted')`.
 */
export interface FieldsFirstLogger {
  debug(fields: Record<string, unknown>, msg: string): void;
  info(fields: Record<string, unknown>, msg: string): void;
  warn(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
}

/**
 * Wraps a fields-first logger (pino, bunyan, or any logger called as `info(fields, msg)`) as a
 * {@link Logger}. A pino or bunyan instance passed as `logger` is wrapped by itself (see
 * {@link asLogger}); call this for another fields-first logger.
 */
export function fieldsFirstLogger(target: FieldsFirstLogger): Logger {
  const bind =
    (level: keyof FieldsFirstLogger) =>
    (msg: string, fields?: Record<string, unknown>): void =>
      target[level](fields ?? {}, msg);
  return { debug: bind('debug'), info: bind('info'), warn: bind('warn'), error: bind('error') };
}

/**
 * pino's and bunyan's methods accept `(msg, ...args)` as well, so an instance type-checks as a
 * {@link Logger}; but called that way they print the message and drop the fields (pino reads
 * them as format arguments). So the logger a host passes is recognised by what those two
 * libraries document and wrapped with {@link fieldsFirstLogger}; any other object is used as
 * it is, called `(msg, fields)`.
 *
 * - pino: every instance and child holds `Symbol.for('pino.serializers')`, a symbol pino
 *   keeps global across its versions for other libraries to see.
 * - bunyan: a `Logger` has an `addStream` method and a `streams` array.
 */
export function asLogger(logger: Logger): Logger {
  return isFieldsFirst(logger) ? fieldsFirstLogger(logger as unknown as FieldsFirstLogger) : logger;
}

function isFieldsFirst(logger: object): boolean {
  if (Symbol.for('pino.serializers') in logger) return true;
  const maybeBunyan = logger as { addStream?: unknown; streams?: unknown };
  return typeof maybeBunyan.addStream === 'function' && Array.isArray(maybeBunyan.streams);
}

/** A logger bound to one store: every line carries its `memory_store_id`. */
export function storeLogger(logger: Logger, memoryStoreId: string): Logger {
  const bind =
    (level: keyof Logger) =>
    (msg: string, fields?: Record<string, unknown>) =>
      logger[level](msg, { memory_store_id: memoryStoreId, ...fields });
  return { debug: bind('debug'), info: bind('info'), warn: bind('warn'), error: bind('error') };
}
