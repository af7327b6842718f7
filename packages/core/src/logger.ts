import createDebug from 'debug';
import { escapeForTerminal, jsonForTerminal } from './terminal-text.js';
import type { Logger } from './types.js';

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

/** A logger bound to one store: every line carries its `memory_store_id`. */
export function storeLogger(logger: Logger, memoryStoreId: string): Logger {
  const bind =
    (level: keyof Logger) =>
    (msg: string, fields?: Record<string, unknown>) =>
      logger[level](msg, { memory_store_id: memoryStoreId, ...fields });
  return { debug: bind('debug'), info: bind('info'), warn: bind('warn'), error: bind('error') };
}
