// chronomem web UI: a little JavaScript over server-rendered pages.
"use strict";
window.chronomem = (function () {
  function iso(seconds) {
    return new Date(seconds * 1000).toISOString().slice(0, 16) + "Z";
  }

  // The timeline: moving the as-of control (or the agent, or the history box) re-renders the
  // list for that instant, from the server.
  function timeline(form) {
    if (!form) return;
    var space = form.dataset.space, slider = form.querySelector("#as-of");
    var label = form.querySelector("#as-of-label"), pending = null;
    function show() {  // the chosen instant as a date, to the eye and to a screen reader
      var text = iso(Number(slider.value)).replace("T", " ").replace("Z", " UTC");
      label.textContent = text;
      slider.setAttribute("aria-valuetext", text);
    }
    // Following "now" until the control is moved: the space's changes (its feed, as
    // Server-Sent Events) then redraw the list as they commit, instead of a reload.
    var following = form.dataset.now === "true", missed = 0;
    function refresh(atNow) {
      var params = new URLSearchParams({
        agent: form.querySelector("#agent").value,
        history: form.querySelector("#history").checked ? "true" : "false",
      });
      if (atNow !== true) {
        following = false;
        params.set("as_of", iso(Number(slider.value)));
        show();
      }
      document.getElementById("timeline-title").textContent =
        "What " + (form.querySelector("#agent").value || "the agent") + " knew";
      if (pending) pending.abort();
      pending = new AbortController();
      var box = document.getElementById("timeline");
      box.setAttribute("aria-busy", "true");
      fetch("/ui/spaces/" + encodeURIComponent(space) + "/timeline?" + params, { signal: pending.signal })
        .then(function (r) { return r.text(); })
        .then(function (html) {
          box.innerHTML = html;
          fold(box);
          box.setAttribute("aria-busy", "false");
        })
        .catch(function () {});
      history.replaceState(null, "", "?" + params);
    }
    function redraw() { refresh(following); }
    slider.addEventListener("input", show);
    slider.addEventListener("change", refresh);
    form.querySelector("#agent").addEventListener("change", redraw);
    form.querySelector("#history").addEventListener("change", redraw);
    if (!window.EventSource) return;
    var live = document.getElementById("live"), soon = null;
    var changes = new EventSource("/ui/spaces/" + encodeURIComponent(space) + "/changes?after=" +
                                  encodeURIComponent(form.dataset.lastChange || "0"));
    changes.addEventListener("change", function (event) {
      form.dataset.lastChange = event.lastEventId;
      if (!following) {  // an instant in the past was chosen: say so, leave the list be
        missed += 1;
        live.textContent = missed + (missed === 1 ? " change" : " changes") +
          " since this instant was chosen";
        return;
      }
      clearTimeout(soon);  // a burst of changes redraws once
      soon = setTimeout(function () {
        refresh(true);
        live.textContent = "Updated " + new Date().toISOString().slice(11, 19) + " UTC";
      }, 150);
    });
  }

  // Long records fold to their first lines (the stylesheet clamps every .fold). A fold that
  // hides something gets a button right after it, so the keyboard reaches it next after the
  // record's link; the button says whether the text is open (aria-expanded).
  var folds = 0;
  function fold(root) {
    root.querySelectorAll(".fold").forEach(function (text) {
      var next = text.nextElementSibling;
      var toggle = next && next.classList.contains("fold-toggle") ? next : null;
      var hides = text.scrollHeight > text.clientHeight + 1;
      if (toggle) {
        if (toggle.getAttribute("aria-expanded") === "false") toggle.hidden = !hides;
        return;
      }
      if (!hides) return;
      text.id = text.id || "fold-" + (++folds);
      toggle = document.createElement("button");
      toggle.type = "button";
      toggle.className = "fold-toggle";
      toggle.textContent = "Show more";
      toggle.setAttribute("aria-expanded", "false");
      toggle.setAttribute("aria-controls", text.id);
      text.insertAdjacentElement("afterend", toggle);
    });
  }
  document.addEventListener("click", function (event) {
    var toggle = event.target.closest && event.target.closest(".fold-toggle");
    if (!toggle) return;
    var open = toggle.getAttribute("aria-expanded") !== "true";
    document.getElementById(toggle.getAttribute("aria-controls")).classList.toggle("unfolded", open);
    toggle.setAttribute("aria-expanded", String(open));
    toggle.textContent = open ? "Show less" : "Show more";
  });

  // The causal view: events and weighted links; a chosen crisis and its ancestors stand out.
  function graph(box) {
    if (!box || !window.cytoscape) return;
    var data = JSON.parse(box.dataset.graph);
    var elements = data.nodes.concat(data.edges);
    var cy = cytoscape({
      container: box, elements: elements, wheelSensitivity: 0.2,
      layout: { name: "breadthfirst", directed: true, padding: 20, spacingFactor: 1.1 },
      style: [
        { selector: "node", style: { label: "data(label)", "font-size": 10, "text-wrap": "wrap",
          "text-max-width": 120, "background-color": "#cbd5e1", width: 18, height: 18 } },
        { selector: "edge", style: { label: "data(weight)", "font-size": 9, "curve-style": "bezier",
          "target-arrow-shape": "triangle", width: "mapData(weight, 0, 1, 1, 5)", "line-color": "#94a3b8",
          "target-arrow-color": "#94a3b8" } },
        { selector: ".ancestor", style: { "background-color": "#f59e0b" } },
        { selector: ".crisis", style: { "background-color": "#ef4444", width: 26, height: 26 } },
        { selector: ".path", style: { "line-color": "#f59e0b", "target-arrow-color": "#f59e0b" } },
      ],
    });
    if (data.crisis) {
      cy.getElementById(data.crisis).addClass("crisis");
      Object.keys(data.ancestors).forEach(function (id) { cy.getElementById(id).addClass("ancestor"); });
      cy.edges().forEach(function (e) {
        var s = e.data("source"), t = e.data("target");
        if ((s in data.ancestors) && (t in data.ancestors || t === data.crisis)) e.addClass("path");
      });
    }
    box.cytoscape = cy;  // for the browser tests and the console
    box.dataset.ready = "true";
  }

  document.addEventListener("DOMContentLoaded", function () {
    timeline(document.getElementById("timeline-controls"));
    fold(document);
    var resized = null;  // a narrower window may hide more, a wider one less
    window.addEventListener("resize", function () {
      clearTimeout(resized);
      resized = setTimeout(function () { fold(document); }, 150);
    });
  });
  return { graph: graph };
})();
