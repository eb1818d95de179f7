// Following a run: every event of its log delivered once, in seq order.
// First what the log already holds (GET …/runs/{id}/events?after_seq=),
// then the live stream through the browser's own EventSource on a stream
// ticket's URL (POST …/runs/{id}/stream-ticket; the token stays out of the
// URL) with &after_seq= the last seq delivered. EventSource's own
// reconnects send Last-Event-ID; when it gives up (the ticket expired, the
// host restarted) a new ticket is minted and the stream resumed from the
// last seq. A duplicate is dropped; a gap is filled from the log.

import { allEvents, post, runPath } from "./api.js";

// EVENT_TYPES are the named SSE events a run's stream carries.
export const EVENT_TYPES = [
  "run.accepted", "run.status", "assistant.delta", "tool.started", "tool.completed", "tool.failed",
  "permission.requested", "permission.resolved", "run.paused", "run.resumed",
  "revision.created", "checkpoint.created", "run.completed", "run.failed", "run.cancelled",
];

const TERMINAL = new Set(["run.completed", "run.failed", "run.cancelled"]);

// Reconnect backoff: doubled from RETRY_MIN_MS on each failure in a row,
// at most RETRY_MAX_MS, so a host that is down is not hammered.
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 10000;

// Follower follows one run. handlers: onEvent(envelope) for each event,
// onState("loading" | "live" | "reconnecting" | "done" | "closed"),
// onError(ApiError) for a failure it will retry.
export class Follower {
  constructor(app, runId, handlers) {
    this.app = app;
    this.runId = runId;
    this.h = handlers;
    this.last = 0;
    this.done = false;
    this.closed = false;
    this.es = null;
    this.retries = 0;
    this.timer = 0;
    this.syncing = false;
  }

  // catchUp delivers what the log holds after the last seq delivered.
  async catchUp() {
    this.state("loading");
    await allEvents(this.app, this.runId, this.last, (items) => {
      for (const env of items) this.deliver(env);
    });
    if (this.done) this.state("done");
  }

  // start catches up from the log, then follows the stream until the run's
  // terminal event.
  async start() {
    await this.catchUp();
    if (!this.done) await this.open();
  }

  // deliver passes on the next event; it returns false on a gap.
  deliver(env) {
    if (this.closed || env.seq <= this.last) return true; // seen already
    if (env.seq !== this.last + 1) return false;
    this.last = env.seq;
    if (TERMINAL.has(env.event)) this.done = true;
    this.h.onEvent(env);
    if (this.done) {
      this.stopStream();
      this.state("done");
    }
    return true;
  }

  async open() {
    if (this.closed || this.done || this.es) return;
    let ticket;
    try {
      ticket = await post(`${runPath(this.app, this.runId)}/stream-ticket`);
    } catch (err) {
      if (this.h.onError) this.h.onError(err);
      this.retry();
      return;
    }
    if (this.closed || this.done || this.es) return;
    // A new EventSource cannot send Last-Event-ID: after_seq says the same.
    const es = new EventSource(`${ticket.stream_url}&after_seq=${this.last}`);
    this.es = es;
    const onMessage = (m) => {
      if (es !== this.es) return;
      let env;
      try {
        env = JSON.parse(m.data);
      } catch {
        return;
      }
      if (!this.deliver(env)) this.resync();
    };
    for (const type of EVENT_TYPES) es.addEventListener(type, onMessage);
    es.onopen = () => {
      this.retries = 0;
      this.state("live");
    };
    es.onerror = () => {
      if (es !== this.es) return;
      if (es.readyState === EventSource.CLOSED) {
        // EventSource gave up (a dead ticket, 204 at the end): go on with a
        // new ticket from the last seq.
        this.es = null;
        this.retry();
      } else {
        this.state("reconnecting");
      }
    };
  }

  // resync fills a gap from the log, then follows the stream again.
  async resync() {
    if (this.syncing) return;
    this.syncing = true;
    this.stopStream();
    try {
      await this.catchUp();
    } catch (err) {
      if (this.h.onError) this.h.onError(err);
    } finally {
      this.syncing = false;
    }
    if (!this.done) this.retry(true);
  }

  retry(now = false) {
    if (this.closed || this.done || this.timer) return;
    this.state("reconnecting");
    const wait = now ? 0 : Math.min(RETRY_MIN_MS * 2 ** this.retries, RETRY_MAX_MS);
    this.retries++;
    this.timer = setTimeout(() => {
      this.timer = 0;
      this.open();
    }, wait);
  }

  stopStream() {
    if (this.es) this.es.close();
    this.es = null;
  }

  // close stops following (the view went away).
  close() {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = 0;
    this.stopStream();
    this.state("closed");
  }

  state(s) {
    if (this.h.onState) this.h.onState(s);
  }
}
