import { EventEmitter } from 'node:events';
import type { MounterEventName, MounterEvents } from '../model/events.js';
import { debugLogger } from './logger.js';
import type { Logger } from '../model/types.js';

/** A typed EventEmitter whose `emit` survives throwing listeners. */
export class MounterEventEmitter extends EventEmitter {
  /** Where a throwing listener is reported. */
  protected eventLogger(): Logger {
    return debugLogger();
  }

  override on<K extends MounterEventName>(event: K, listener: (...args: MounterEvents[K]) => void): this {
    return super.on(event, listener as (...args: unknown[]) => void);
  }

  override once<K extends MounterEventName>(event: K, listener: (...args: MounterEvents[K]) => void): this {
    return super.once(event, listener as (...args: unknown[]) => void);
  }

  override off<K extends MounterEventName>(event: K, listener: (...args: MounterEvents[K]) => void): this {
    return super.off(event, listener as (...args: unknown[]) => void);
  }

  /**
   * Calls each listener in turn; one that throws is logged and the next still runs. Returns
   * whether any listener was called, as EventEmitter's does.
   */
  override emit<K extends MounterEventName>(event: K, ...args: MounterEvents[K]): boolean {
    // rawListeners: a `once` wrapper removes itself when called, as with a plain emit.
    const listeners = this.rawListeners(event) as ((...a: unknown[]) => unknown)[];
    for (const listener of listeners) {
      try {
        const result = listener.apply(this, args);
        // An async listener's rejection is this one's too: never an unhandled rejection.
        if (result instanceof Promise) result.catch((err: unknown) => this.listenerThrew(event, err));
      } catch (err) {
        this.listenerThrew(event, err);
      }
    }
    return listeners.length > 0;
  }

  private listenerThrew(event: string, err: unknown): void {
    this.eventLogger().warn('event listener threw; the sync goes on', { event, error: err instanceof Error ? err.message : String(err) });
  }
}
