"use strict";
// The samples panel: a tracepoint's samples kept with their fields (stax samples; stax
// record -e SYS:NAME), the newest of those the view selects (its window, thread or process
// and stack transforms), newest first: each with its time, thread, the function it was
// taken in (its stack in the cell's title, or under the row once expanded) and a column
// per field. A click on a row highlights its function in the flame graph (the search).
// The event's numeric fields are also offered by "weigh by" (app.js's drawWeigh): the
// flame graph and the top table then weigh each function by the field's sum over its
// samples (flame --weight).
//
// Loaded before app.js: its functions use app.js's when called, never at load.

// SAMPLES_N is how many samples the panel lists: the newest of those the view selects.
const SAMPLES_N = 200;
const smp = { open: new Set(), chosen: "" }; // rows expanded and the row chosen, by sampleKey

// traceOf is what the status says of the samples event keeps with their fields: null for
// an event that keeps none (not a tracepoint).
function traceOf(event) {
  const trs = (state.summary && state.summary.traces) || [];
  return trs.find((t) => t.event === event) || null;
}

// eventName is the event the view counts: the one chosen, else the run's first.
function eventName() {
  if (view.event) return view.event;
  const evs = (state.summary && state.summary.events) || [];
  return evs.length ? evs[0].name : "";
}

// numericFields are the fields of the view's event whose sums can weigh the flame graph.
function numericFields() {
  const tr = traceOf(eventName());
  return tr ? tr.fields.filter((f) => f.kind === "int").map((f) => f.name) : [];
}

// weightField is the field the flame graph and the top table weigh (the API's weight):
// the view's, where its event has that number and the mode weighs samples; "": none. Until
// the status is in, the URL's is trusted.
function weightField() {
  if (!view.weight || view.mode !== "cpu") return "";
  return !state.summary || numericFields().includes(view.weight) ? view.weight : "";
}

// samplesParams is the samples panel's query: the view's window, thread or process and
// transforms, its event named (the API requires one), and how many.
const samplesParams = () =>
  query({ only: ["from", "to", "tid", "pid", "focus", "ignore", "hide", "collapse_image", "fold_recursion", "python"] }, { event: eventName(), n: SAMPLES_N });

// loadSamples asks for the panel's samples where the view's event keeps them and need
// says the answer held is not the view's (refresh's need); it returns the answer's bytes.
async function loadSamples(need, signal) {
  const panel = $("#samples-panel");
  panel.hidden = !((state.summary && state.summary.traces) || []).length;
  if (panel.hidden || !traceOf(eventName())) {
    drawSamples();
    return 0;
  }
  const q = samplesParams();
  if (!need("samples", q)) {
    drawSamples();
    return 0;
  }
  let bytes = 0;
  try {
    const a = await api("samples", q, signal);
    if (signal.aborted) return 0;
    state.samples = a;
    bytes = a._bytes;
  } catch (err) {
    if (signal.aborted) return 0;
    state.samples = err;
  }
  state.keys.samples = q.toString();
  drawSamples();
  return bytes;
}

const sampleKey = (s) => `${s.t}\u0000${s.tid}`;

// fieldText is a field's value as the panel shows it: integers with thousands separators
// (a pointer's in hex; those beyond 2^53 come as strings of their digits), strings as
// they are, lists of numbers between brackets (the first 16).
function fieldText(f, v) {
  if (v === undefined || v === null) return "";
  if (f.kind === "int") {
    if (/\*/.test(f.type)) return "0x" + BigInt.asUintN(64, BigInt(v)).toString(16);
    return typeof v === "string" ? BigInt(v).toLocaleString("en-US") : commas(v);
  }
  if (Array.isArray(v)) return "[" + v.slice(0, 16).join(", ") + (v.length > 16 ? `, … ${commas(v.length)} in all` : "") + "]";
  return String(v);
}

function drawSamples() {
  const panel = $("#samples-panel");
  if (panel.hidden) return;
  const ev = eventName();
  const tr = traceOf(ev);
  const head = $("#samples-table thead tr");
  const body = $("#samples-table tbody");
  const title = $("#samples-title");
  // A line in place of rows: the panel is no taller than it.
  const say = (text, cls = "placeholder") => {
    head.innerHTML = "";
    body.innerHTML = `<tr><td class="${cls}">${esc(text)}</td></tr>`;
    $("#samples-box").classList.add("empty");
    $("#samples-hint").hidden = true;
  };
  $("#samples-h").textContent = tr ? `Samples of ${ev}` : "Samples";
  if (!tr) {
    const others = state.summary.traces.map((t) => t.event).join(", ");
    title.textContent = "";
    say(`event ${ev} keeps no fields: only a tracepoint's samples keep them (stax record -e SYS:NAME). This run's: ${others}; the event selector picks one.`);
    return;
  }
  const a = state.samples;
  if (!a) return; // asked
  if (a instanceof Error) {
    title.textContent = "";
    say(a.message, "error");
    return;
  }
  const kept = `the run keeps ${commas(a.kept)} with their fields (the newest ${commas(a.cap)} at most${a.dropped ? `; ${commas(a.dropped)} older let go` : ""})`;
  const rows = (a.samples || []).slice().reverse(); // newest first
  const fields = tr.fields;
  if (!rows.length) {
    title.textContent = kept;
    if (!a.kept) say(state.summary.live ? `no samples of ${ev} kept yet` : `the run kept no samples of ${ev}`);
    else say(`no samples of ${ev} in this view: the window, the thread or the transforms select none of the ${commas(a.kept)} kept`);
    return;
  }
  $("#samples-box").classList.remove("empty");
  $("#samples-hint").hidden = false;
  const n = rows.length;
  title.innerHTML = `<span id="samples-count">${n === a.matched ? `all ${commas(n)}` : `${commas(n)} of ${commas(a.matched)}`}</span> ${a.matched === 1 ? "sample" : "samples"} in this view, ${n < a.matched ? `the newest ${commas(n)} listed` : "listed"} newest first · ${esc(kept)}` +
    (fields.length ? "" : " · this tracepoint has no fields but the common ones");
  const cols = ["Time (s)", "Thread", "Function", ...fields.map((f) => f.name)];
  const titles = ["seconds since the run's start", "thread name and id (the process id in the tooltip)", "the function the sample was taken in: the leaf of its stack", ...fields.map((f) => `${f.name}: ${f.type}`)];
  const headHTML = cols.map((c, i) => `<th class="${i === 0 || (i >= 3 && fields[i - 3].kind === "int") ? "num" : ""}" title="${esc(titles[i])}">${esc(c)}</th>`).join("");
  if (head.innerHTML !== headHTML) head.innerHTML = headHTML;
  const html = [];
  rows.forEach((s, i) => {
    const k = sampleKey(s);
    const open = smp.open.has(k);
    const stack = (s.stack || []).join("\n← ");
    const cells = fields.map((f) => {
      const v = s.fields ? s.fields[f.name] : undefined;
      const t = fieldText(f, v);
      const cls = f.kind === "int" ? "num field" : f.kind === "string" ? "field field-str" : "field";
      return `<td class="${cls}" data-field="${esc(f.name)}"${f.kind === "int" ? "" : ` title="${esc(t)}"`}>${t === "" ? '<span class="none">–</span>' : esc(t)}</td>`;
    });
    html.push(`<tr class="sample${smp.chosen === k ? " chosen" : ""}" data-i="${i}" tabindex="0"><td class="num">${s.t.toFixed(6)}</td><td title="process ${s.pid}">${esc(s.comm || "?")} ${s.tid}</td>` +
      `<td title="${esc(stack)}"><span class="tw" aria-label="the stack">${open ? "▾" : "▸"}</span>${esc(s.func || "[unknown]")}</td>${cells.join("")}</tr>`);
    if (open) html.push(`<tr class="stack-row"><td colspan="${cols.length}">${(s.stack || []).map(esc).join("<br>← ") || "(no stack)"}</td></tr>`);
  });
  body.innerHTML = html.join("");
  smp.rows = rows;
}

function setupSamples() {
  $("#samples-table tbody").addEventListener("click", (e) => {
    const tr = e.target.closest("tr.sample");
    if (!tr) return;
    const s = smp.rows[tr.dataset.i];
    const k = sampleKey(s);
    if (e.target.closest(".tw")) {
      if (smp.open.has(k)) smp.open.delete(k);
      else smp.open.add(k);
      drawSamples();
      return;
    }
    // Highlight the function where it appears in the graph, as the callers' rows do.
    smp.chosen = k;
    drawSamples();
    if (!s.func) return;
    const re = reQuote(s.func);
    $("#search").value = re;
    view.search = re;
    writeURL(false);
    applySearch();
    drawLegend();
    countMatches();
  });
}
