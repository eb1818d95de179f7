// The chat's composer: the prompt, the engine (from the app's
// capabilities: unusable ones are listed, disabled, with the reason), the
// model ("Auto" = the run gets the tenant's default), an optional token
// budget, Send and Cancel. Enter sends; Shift+Enter starts a new line.

import { h, showError } from "./dom.js";

let composers = 0;

// engineLabel says why an engine cannot run, when it cannot.
function engineOption(e, selected) {
  let why = "";
  if (!e.available) why = e.reason || e.state;
  else if (e.runtime_supported === false) why = `the sandbox lacks ${(e.missing_features || []).join(", ")}`;
  return h("option", { value: e.name, disabled: !!why, selected: selected && !why },
    why ? `${e.name} (unavailable: ${why})` : e.name);
}

export class Composer {
  // ctx is the workspace (capabilities, models); onSend(request) starts a
  // run and throws ApiError on refusal; onCancel() cancels the active run.
  constructor(ctx, { onSend, onCancel }) {
    const n = ++composers;
    this.onSend = onSend;
    this.onCancel = onCancel;
    this.activeView = null;
    this.prompt = h("textarea", { id: `prompt-${n}`, class: "prompt-input", rows: 4, required: true,
      placeholder: "Describe the change you want. Enter sends, Shift+Enter adds a line.",
      onkeydown: (e) => {
        if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
          e.preventDefault();
          this.el.requestSubmit();
        }
      } });
    this.engine = h("select", { id: `engine-${n}`, class: "engine" }, h("option", { value: "" }, "default"));
    this.model = h("select", { id: `model-${n}`, class: "model" }, h("option", { value: "" }, "Auto"));
    this.budget = h("input", { id: `budget-${n}`, class: "budget", type: "number", min: 1, step: 1, inputmode: "numeric", placeholder: "none" });
    this.send = h("button", { type: "submit", class: "send primary" }, "Send");
    this.cancel = h("button", { type: "button", class: "cancel", disabled: true, onclick: () => this.cancelRun() }, "Cancel run");
    this.err = h("div", { class: "composer-error" });
    this.el = h("form", { class: "composer", method: "post", "aria-label": "Send a message", onsubmit: (e) => this.submit(e) },
      h("label", { for: this.prompt.id }, "Message"), this.prompt,
      h("div", { class: "composer-row" },
        h("label", { for: this.engine.id }, "Engine"), this.engine,
        h("label", { for: this.model.id }, "Model"), this.model,
        h("label", { for: this.budget.id }, "Token budget"), this.budget,
        this.send, this.cancel),
      this.err);
    this.load(ctx);
  }

  async load(ctx) {
    try {
      const [caps, models] = await Promise.all([ctx.capabilities(), ctx.models()]);
      this.engine.replaceChildren(...caps.engines.map((e) => engineOption(e, e.name === caps.default_engine)));
      for (const m of models.items) {
        if (!m.active || (m.kind && m.kind !== "chat")) continue;
        this.model.append(h("option", { value: m.id },
          `${m.name} (${m.provider_model} at ${m.endpoint_host})${m.is_default ? " · default" : ""}`));
      }
    } catch (err) {
      showError(this.err, err);
    }
  }

  async submit(e) {
    e.preventDefault();
    if (this.activeView || this.sending) return;
    const req = { prompt: this.prompt.value };
    if (this.engine.value) req.engine = this.engine.value;
    if (this.model.value) req.model_id = this.model.value;
    if (this.budget.value !== "") req.token_budget = Number(this.budget.value);
    this.sending = true;
    this.send.disabled = true;
    try {
      await this.onSend(req);
      this.prompt.value = "";
      showError(this.err, null);
    } catch (err) {
      showError(this.err, err);
    } finally {
      this.sending = false;
      this.send.disabled = !!this.activeView;
    }
  }

  async cancelRun() {
    if (!this.activeView) return;
    this.cancel.disabled = true;
    try {
      await this.onCancel(this.activeView);
      this.cancelled = this.activeView;
      showError(this.err, null);
    } catch (err) {
      showError(this.err, err);
      this.cancel.disabled = !this.activeView;
    }
  }

  // setActive says which run of the chat is still going (null: none):
  // Send waits for it to end; Cancel stops it.
  setActive(view) {
    this.activeView = view;
    this.send.disabled = !!view || this.sending;
    this.cancel.disabled = !view || view === this.cancelled;
  }
}
