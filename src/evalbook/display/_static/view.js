// evalbook's one view (eb.show): the kernel renders every piece of HTML; this module shows
// what it is sent and sends back what the reader does (docs/architecture.md, the protocol):
//   front end -> kernel  {action: "hello"} once drawn; {action, value} on a click or change
//   kernel -> front end  {html}: the whole view, drawn again
// An element with data-eb-action sends its name on a click (with data-eb-value); a <select>
// or <input> with it sends its value on a change; a search box sends its text once typing
// pauses. With no kernel (a saved notebook) nothing answers "hello" and nothing is drawn:
// the static HTML beside the widget is then the one view.

const TYPING_PAUSE_MS = 250;

function valueOf(input) {
  if (input.type === "checkbox") return input.checked ? "true" : "false";
  return input.value;
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.setAttribute("data-evalbook", "live");
  root.style.color = "inherit";
  el.appendChild(root);
  let typing = null; // the pending search: its timer
  const lastSent = new Map(); // a search box's last text sent (a change after it is no news)

  function send(action, value) {
    model.send({ action, value: value == null ? "" : String(value) });
  }

  function show(html) {
    // the focused control keeps its focus, caret and typed text across a redraw; a box that
    // scrolls (the case table, sideways) keeps its scroll position; a "show all" the reader
    // opened stays open when the redraw draws the same one (same content: nothing else to match
    // it by, and a different text in its place must not open by itself)
    const active = document.activeElement;
    const focused = active && root.contains(active) ? active.getAttribute("data-eb-action") : null;
    const isText = focused && active.tagName === "INPUT" && active.type === "search";
    const typed = isText ? active.value : null;
    const caret = isText ? [active.selectionStart, active.selectionEnd] : null;
    const scrolled = new Map();
    root.querySelectorAll("[data-eb-scroll]").forEach((box) => {
      scrolled.set(box.getAttribute("data-eb-scroll"), [box.scrollLeft, box.scrollTop]);
    });
    const opened = new Set();
    root.querySelectorAll("details[open]").forEach((d) => opened.add(d.innerHTML));
    root.innerHTML = html;
    if (opened.size) {
      root.querySelectorAll("details").forEach((d) => {
        if (opened.has(d.innerHTML)) d.open = true;
      });
    }
    root.querySelectorAll("[data-eb-scroll]").forEach((box) => {
      const at = scrolled.get(box.getAttribute("data-eb-scroll"));
      if (at) [box.scrollLeft, box.scrollTop] = at;
    });
    if (!focused) return;
    const again = Array.from(root.querySelectorAll("[data-eb-action]")).find(
      (x) => x.getAttribute("data-eb-action") === focused,
    );
    if (!again) return;
    if (typed !== null && typing !== null) again.value = typed; // still typing: keep the text
    again.focus();
    if (caret && again.setSelectionRange) {
      try {
        again.setSelectionRange(caret[0], caret[1]);
      } catch (_) {
        // a field type without a caret
      }
    }
  }

  function onMessage(msg) {
    if (msg && typeof msg.html === "string") show(msg.html);
  }

  function onClick(event) {
    const target = event.target.closest("[data-eb-action]");
    if (!target || !root.contains(target)) return;
    if (target.tagName === "SELECT" || target.tagName === "INPUT") return; // their change sends
    if (target.disabled) return;
    // a "show all" (<summary>) or a link inside a clickable row is its own, not the row's
    const own = event.target.closest("summary, a");
    if (own && own !== target && target.contains(own)) return;
    event.preventDefault();
    send(target.getAttribute("data-eb-action"), target.getAttribute("data-eb-value"));
  }

  function onChange(event) {
    const target = event.target;
    const action = target.getAttribute && target.getAttribute("data-eb-action");
    if (!action) return;
    if (target.type === "search") {
      clearTimeout(typing);
      typing = null;
      if (lastSent.get(action) === target.value) return;
      lastSent.set(action, target.value);
    }
    send(action, valueOf(target));
  }

  function onInput(event) {
    const target = event.target;
    const action = target.getAttribute && target.getAttribute("data-eb-action");
    if (!action || target.type !== "search") return;
    clearTimeout(typing);
    typing = setTimeout(() => {
      typing = null;
      lastSent.set(action, target.value);
      send(action, target.value);
    }, TYPING_PAUSE_MS);
  }

  model.on("msg:custom", onMessage);
  root.addEventListener("click", onClick);
  root.addEventListener("change", onChange);
  root.addEventListener("input", onInput);
  send("hello", "");
  return () => {
    clearTimeout(typing);
    model.off("msg:custom", onMessage);
    root.removeEventListener("click", onClick);
    root.removeEventListener("change", onChange);
    root.removeEventListener("input", onInput);
  };
}

export default { render };
