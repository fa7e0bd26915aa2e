// The tenscalc page: sends what the user typed to /api/analyse and shows the answers.
// One request per input, whose answer streams its parts as they are ready: "derive"
// (formulas, text, drawings, Python), then "check" (finite differences), then
// "convexity".  Every request carries this page's session and the input's number: a
// newer input aborts the request in flight and the server stops its worker (it
// supersedes older numbers).
"use strict";

// label, expression, declarations, wrt, order: half in matrix notation, half in the einsum language
const EXAMPLES = [
  ["quadratic form x'*A*x", "x'*A*x", "", "x", "2"],
  ["quadratic form, A symmetric", "x'*A*x", "A 2 symmetric", "x", "2"],
  ["least squares norm2(A*x-b)^2 (b declared a vector)", "norm2(A*x-b)^2", "b 1", "x", "2"],
  ["log det X, X positive definite", "log(det(X))", "X 2 pd", "X", "1"],
  ["trace tr(inv(X)*A)", "tr(inv(X)*A)", "", "X", "1"],
  ["einsum: quadratic form", "x *(i,ij->j) A *(j,j->) x", "", "x", "2"],
  ["einsum: least squares ‖Ax − y‖²", "(A *(ij,j->i) x - y) *(i,i->) (A *(ij,j->i) x - y)", "", "x", "2"],
  ["einsum: logistic loss", "log(1 + exp(-(y *(i,i->i) (X *(ij,j->i) w)))) *(i,->) 1", "", "w", "2"],
  ["cubic form (order-3 tensor)", "T *(ijk,i->jk) x *(jk,j->k) x *(k,k->) x", "T 3", "x", "3"],
  ["neural layer tanh(Wx)", "tanh(W *(ij,j->i) x)", "", "W", "1"],
];
const KINDS = [[0, "scalar"], [1, "vector"], [2, "matrix"], [3, "tensor, order 3"], [4, "tensor, order 4"],
  [5, "tensor, order 5"], [6, "tensor, order 6"]];
const TICKS = [["symmetric", "symmetric"], ["pd", "positive definite"]];

const $ = (id) => document.getElementById(id);
const fields = ["expression", "declarations", "wrt"];
let generation = 0;        // the answer to an older input is dropped
// names this page to the server (not a secret: it only lets a newer input supersede older ones)
const SESSION = Math.random().toString(36).slice(2) + Date.now().toString(36);
let controllers = [];      // in-flight requests of the current input
let pythonSource = "";
let scriptSource = "";

function request() {
  return {
    expression: $("expression").value,
    declarations: $("declarations").value,
    wrt: $("wrt").value,
    order: Number($("order").value),
    defaults: $("defaults").checked,
    session: SESSION,
    seq: generation,
  };
}

// One request per input: the server streams one JSON line per part as it is ready
// (application/x-ndjson); a refused request is one JSON object (application/json).
async function* answers(body, controller) {
  const response = await fetch("api/analyse", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  if (!(response.headers.get("Content-Type") || "").startsWith("application/x-ndjson")) {
    try {
      yield await response.json();
    } catch (e) {
      yield { ok: false, error: { message: `the server answered ${response.status} ${response.statusText}` } };
    }
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      if (line.trim()) yield JSON.parse(line);
    }
  }
}

function status(text) { $("status").textContent = text; }

function showError(error) {
  const box = $("error");
  box.textContent = error.message;
  box.hidden = false;
  for (const name of fields) $(name).classList.toggle("invalid", error.field === name);
  $("results").classList.add("stale");
  // a timeout or a crash is no fault of the input's syntax
  const stopped = ["Timeout", "Busy", "Crashed", "InternalError", "Unavailable"].includes(error.kind);
  status(stopped ? "no result for this input" : "the input is not valid yet");
}

function clearError() {
  $("error").hidden = true;
  for (const name of fields) $(name).classList.remove("invalid");
}

function tex(target, formula) {
  try {
    katex.render(formula, target, { displayMode: true, throwOnError: true, strict: false, maxSize: 50 });
  } catch (e) {
    target.textContent = formula;  // raw LaTeX rather than nothing
    target.title = String(e);
  }
}

function partial(k, name) {
  return k === 1 ? `\\frac{\\partial f}{\\partial ${name}}` : `\\frac{\\partial^{${k}} f}{\\partial ${name}^{${k}}}`;
}

function latexName(name) {
  // the same rule as tenscalc's LaTeX printer for a plain name: x_1 -> x_{1}
  const m = /^([A-Za-z]+)_?(\d*)$/.exec(name);
  if (m && m[2]) return `${m[1]}_{${m[2]}}`;
  return name.replace(/_/g, "\\_");
}

function formulaBlock(container, labelText, left, entry) {
  const label = document.createElement("div");
  label.className = "label";
  label.textContent = labelText;
  container.appendChild(label);
  const div = document.createElement("div");
  div.className = "formula main";
  container.appendChild(div);
  if (entry.latex === null) {
    div.className = "note";
    div.textContent = entry.latex_error;
    return;
  }
  tex(div, `${left} = ${entry.latex}`);
  // the named temporaries, each on its own line under the formula (a phone is narrow)
  if (!entry.where || !entry.where.length) return;
  const where = document.createElement("div");
  where.className = "where";
  const word = document.createElement("span");
  word.className = "muted";
  word.textContent = "where";
  where.appendChild(word);
  for (const definition of entry.where) {
    const line = document.createElement("div");
    line.className = "formula definition";
    where.appendChild(line);
    tex(line, definition);
  }
  container.appendChild(where);
}

// ---- the type control: one row per variable of the input, writing the declarations field

function showTypes(inputs) {
  const box = $("types"), rows = $("types-rows"), note = $("types-note");
  if (!inputs || !inputs.variables.length) { box.hidden = true; return; }
  box.hidden = false;
  rows.textContent = "";
  note.hidden = !inputs.whole_problem;
  note.textContent = "declared in the expression field's own declare block: edit them there";
  for (const v of inputs.variables) {
    const row = document.createElement("div");
    row.className = "type-row";
    row.dataset.name = v.name;
    // assumptions the control has no box for (positive, intervals ...) are written back unchanged
    row.dataset.others = v.assumptions.filter((a) => !TICKS.some(([word]) => word === a)).join(" ");
    const name = document.createElement("code");
    name.textContent = v.name;
    const select = document.createElement("select");
    select.setAttribute("aria-label", `type of ${v.name}`);
    select.id = `type-${v.name}`;
    if (v.order === null) select.appendChild(new Option("undeclared", ""));
    for (const [order, kind] of KINDS) select.appendChild(new Option(kind, String(order)));
    if (v.order > KINDS.length - 1) select.appendChild(new Option(`tensor, order ${v.order}`, String(v.order)));
    select.value = v.order === null ? "" : String(v.order);
    select.title = v.source === "declared" ? "declared" : v.source === "letter rule"
      ? "guessed by the letter rule: change it to declare it" : "not declared";
    const source = document.createElement("small");
    source.className = "muted";
    source.textContent = v.source === "declared" ? "" : `(${v.source})`;
    row.append(name, select);
    for (const [word, text] of TICKS) {
      const label = document.createElement("label");
      label.className = "tick";
      const box = document.createElement("input");
      box.type = "checkbox"; box.dataset.fact = word; box.id = `${word}-${v.name}`;
      box.checked = v.assumptions.includes(word);
      box.disabled = v.order !== 2;  // only a matrix is symmetric or positive definite
      label.append(box, ` ${text}`);
      row.appendChild(label);
    }
    row.appendChild(source);
    for (const control of row.querySelectorAll("select, input")) control.disabled ||= inputs.whole_problem;
    rows.appendChild(row);
  }
}

function declarationsFromTypes() {
  const parts = [];
  for (const row of document.querySelectorAll("#types-rows .type-row")) {
    const order = row.querySelector("select").value;
    if (order === "") continue;
    const facts = order === "2"
      ? [...row.querySelectorAll("input[data-fact]")].filter((b) => b.checked).map((b) => b.dataset.fact) : [];
    parts.push([row.dataset.name, order, ...facts, row.dataset.others].filter(Boolean).join(" "));
  }
  return parts.join("  ");
}

function typeChanged(event) {
  const row = event.target.closest(".type-row");
  if (!row) return;
  const matrix = row.querySelector("select").value === "2";
  for (const box of row.querySelectorAll("input[data-fact]")) {
    box.disabled = !matrix;
    if (!matrix) box.checked = false;
  }
  $("declarations").value = declarationsFromTypes();
  schedule();
}

function showDerive(answer) {
  const formulas = $("formulas");
  formulas.textContent = "";
  const e = answer.expression;
  const vars = Object.entries(e.variables).map(([n, o]) => `${n} (order ${o})`).join(", ");
  formulaBlock(formulas, `expression: order ${e.order}; variables ${vars || "none"}`, "f", e);
  const lines = [];
  for (const d of answer.derivatives) {
    const name = latexName(d.wrt);
    formulaBlock(formulas, `${d.label}: order ${d.order}, ${d.nodes} nodes` +
      (d.temporaries ? " (with named temporaries)" : ""), partial(d.k, name), d);
    lines.push(`# ${d.label}\n${d.text}`);
  }
  $("einsum-text").textContent = lines.join("\n");
  pythonSource = answer.python;
  scriptSource = answer.script;
  $("python-code").textContent = answer.python;
  $("python-note").textContent = `f(${Object.keys(e.variables).map((n) => n + "=…").join(", ")}) returns ` +
    `(${answer.python_returns.join(", ")})`;
  showDrawing($("dag-expression"), e.drawing, "the expression's DAG");
  const drawn = answer.derivatives.filter((d) => d.drawing);
  const last = drawn[drawn.length - 1];
  $("dag-derivative-caption").textContent = last ? last.label : "derivative";
  showDrawing($("dag-derivative"), last ? last.drawing : { svg: null, note: "" }, "the derivative's DAG");
}

function showDrawing(target, drawing, alt) {
  target.textContent = "";
  if (drawing.svg) {
    const img = document.createElement("img");
    // as an image, an SVG runs no script whatever its labels say
    img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(drawing.svg);
    img.alt = alt;
    target.appendChild(img);
  } else {
    const p = document.createElement("p");
    p.className = "muted note";
    p.textContent = drawing.note;
    target.appendChild(p);
  }
}

function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  row.appendChild(td);
}

function showCheck(answer) {
  const target = $("check");
  target.textContent = "";
  if (!answer.ok) { target.textContent = answer.error.message; $("check-badge").textContent = ""; return; }
  const shapes = Object.entries(answer.shapes).map(([n, s]) => `${n}: ${s.length ? s.join("×") : "scalar"}`);
  const p = document.createElement("p");
  p.textContent = `Symbolic derivatives against central finite differences at random data (seed ${answer.seed}), ` +
    `every independent axis with its own length: ${shapes.join(", ")}.`;
  target.appendChild(p);
  const table = document.createElement("table");
  table.id = "check-table";
  const head = table.insertRow();
  for (const h of ["derivative", "max relative error", "verdict", "method"]) {
    const th = document.createElement("th"); th.textContent = h; head.appendChild(th);
  }
  for (const r of answer.checks) {
    const row = table.insertRow();
    cell(row, r.label);
    cell(row, r.max_error === null ? "—" : r.max_error.toExponential(2));
    if (r.evaluated === false) cell(row, "could not evaluate at random data", "bad");  // r.message says why
    else cell(row, r.ok ? "agrees" : "DISAGREES", r.ok ? "ok" : "bad");
    cell(row, r.method);
  }
  target.appendChild(table);
  const py = document.createElement("p");
  py.id = "python-check";
  const verdict = document.createElement("span");
  verdict.className = answer.python.ok ? "ok" : "bad";
  verdict.textContent = answer.python.ok ? "agrees" : "DISAGREES";
  py.append("Python code: ", verdict,
    ` (${answer.python.message}; max relative difference ${answer.python.max_error.toExponential(2)})`);
  target.appendChild(py);
  $("check-badge").textContent = answer.all_ok ? "✓" : "✗";
  $("check-badge").className = answer.all_ok ? "ok" : "bad";
}

function showConvexity(answer) {
  const target = $("convexity");
  target.textContent = "";
  const badge = $("convexity-badge");
  badge.textContent = "";
  if (!answer.ok) { target.textContent = answer.error.message; return; }
  const c = answer.convexity;
  if (!c.applicable) {
    const p = document.createElement("p"); p.className = "muted"; p.textContent = c.note;
    target.appendChild(p); return;
  }
  const cls = c.certified ? "ok" : c.verdict === "unknown" ? "unknown" : "bad";
  const head = document.createElement("p");
  head.className = "verdict";
  const b = document.createElement("span");
  b.className = cls; b.id = "convexity-verdict"; b.textContent = c.summary;
  head.appendChild(b);
  target.appendChild(head);
  const meaning = document.createElement("p"); meaning.className = "muted"; meaning.textContent = c.meaning;
  target.appendChild(meaning);
  const pre = document.createElement("pre"); pre.id = "convexity-explanation"; pre.textContent = c.explanation;
  target.appendChild(pre);
  badge.textContent = c.verdict;
  badge.className = cls;
}

async function update() {
  const mine = ++generation;
  for (const c of controllers) c.abort();
  controllers = [];
  const body = request();
  if (!body.expression.trim()) {
    clearError(); $("results").hidden = true; $("types").hidden = true; status("type an expression"); return;
  }
  const controller = new AbortController();
  controllers.push(controller);
  status("computing…");
  const parts = ["derive", "check", "convexity"];
  let index = 0;
  try {
    // the answers come in the order of parts; a failure (timeout, invalid input) ends them
    for await (const answer of answers({ ...body, parts }, controller)) {
      if (mine !== generation) return;
      const part = parts[index++];
      if (part === "derive") {
        showTypes(answer.inputs);
        if (!answer.ok) { showError(answer.error); return; }
        clearError();
        showDerive(answer);
        $("results").hidden = false;
        $("results").classList.remove("stale");
        status("derivative ready; checking numerically and deciding convexity…");
        $("check").innerHTML = '<p class="muted">checking…</p>';
        $("convexity").innerHTML = '<p class="muted">deciding…</p>';
        $("check-badge").textContent = ""; $("convexity-badge").textContent = "";
      } else {
        (part === "check" ? showCheck : showConvexity)(answer);
        if (!answer.ok && !answer.part) {  // the server gave up (a deadline): no more answers come
          status(`stopped: ${answer.error.message}`);
          return;
        }
      }
    }
  } catch (e) {
    if (e.name !== "AbortError" && mine === generation) status(`no answer from the server: ${e.message}`);
    return;
  }
  if (mine === generation) status(index === parts.length ? "ready" : "no answer for some parts");
}

let timer = null;
function schedule() {
  clearTimeout(timer);
  timer = setTimeout(update, 250);
}

async function copy(text, button) {
  try {
    await navigator.clipboard.writeText(text);
  } catch (e) {
    const area = document.createElement("textarea");  // older browsers, insecure contexts
    area.value = text; document.body.appendChild(area); area.select();
    document.execCommand("copy"); area.remove();
  }
  const old = button.textContent;
  button.textContent = "copied";
  setTimeout(() => { button.textContent = old; }, 1200);
}

function download(source, filename) {
  const blob = new Blob([source], { type: "text/x-python" });
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = filename;
  document.body.appendChild(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

function selectTab(name) {
  for (const button of document.querySelectorAll(".tabs button")) {
    const on = button.dataset.tab === name;
    button.setAttribute("aria-selected", on ? "true" : "false");
    $(`panel-${button.dataset.tab}`).hidden = !on;
  }
}

function init() {
  const select = $("examples");
  EXAMPLES.forEach(([label], i) => {
    const option = document.createElement("option");
    option.value = String(i); option.textContent = label; select.appendChild(option);
  });
  select.addEventListener("change", () => {
    if (select.value === "") return;
    const [, expression, declarations, wrt, order] = EXAMPLES[Number(select.value)];
    $("expression").value = expression; $("declarations").value = declarations;
    $("wrt").value = wrt; $("order").value = order;
    select.value = "";
    update();
  });
  for (const id of ["expression", "declarations", "wrt"]) $(id).addEventListener("input", schedule);
  for (const id of ["order", "defaults"]) $(id).addEventListener("change", schedule);
  $("input").addEventListener("submit", (e) => { e.preventDefault(); update(); });
  $("copy-einsum").addEventListener("click", (e) => copy($("einsum-text").textContent, e.target));
  $("copy-python").addEventListener("click", (e) => copy(pythonSource, e.target));
  $("download-python").addEventListener("click", () => download(pythonSource, "tenscalc_f.py"));
  $("download-script").addEventListener("click", () => download(scriptSource, "tenscalc_check.py"));
  $("types-rows").addEventListener("change", typeChanged);
  for (const button of document.querySelectorAll(".tabs button")) {
    button.addEventListener("click", () => selectTab(button.dataset.tab));
  }
  const params = new URLSearchParams(location.hash.slice(1));
  if (params.has("e")) {
    $("expression").value = params.get("e");
    $("declarations").value = params.get("d") || "";
    $("wrt").value = params.get("wrt") || "";
    $("order").value = params.get("k") || "1";
  } else {
    const [, expression, declarations, wrt, order] = EXAMPLES[0];
    $("expression").value = expression; $("declarations").value = declarations;
    $("wrt").value = wrt; $("order").value = order;
  }
  update();
}

document.addEventListener("DOMContentLoaded", init);
