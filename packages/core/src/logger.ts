import createDebug from 'debug';
import type { Logger } from './types.js';

/**
 * The default logger: the `debug` package, one namespace per level (`memory-mounter:warn`, ...),
 * so `DEBUG=memory-mounter:*` shows everything and `DEBUG=memory-mounter:warn,memory-mounter:error`
 * only what needs attention. Fields are appended as JSON so a line can be grepped by store or path.
 */
export function debugLogger(namespace = 'memory-mounter'): Logger {
  const channel = (level: string) => {
    const d = createDebug(`${namespace}:${level}`);
    return (msg: string, fields?: Record<string, unknown>) => {
      if (d.enabled) d(fields ? `${msg} ${JSON.stringify(fields)}` : msg);
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
