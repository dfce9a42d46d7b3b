// askgate inbox: live updates of the listing, hotkeys for options and a confirmation's decision, and the
// browser's time zone as the default zone. Everything works without it.
(function () {
  "use strict";
  var asks = document.getElementById("asks");
  if (asks && asks.dataset.live === "1" && window.EventSource) {
    var source = new EventSource("/events");
    var refreshing = false;
    source.addEventListener("changed", function () {
      if (refreshing) { return; }
      refreshing = true;
      var url = new URL(window.location.href);
      url.searchParams.set("partial", "1");
      fetch(url, { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (html) {
            var holder = document.createElement("div");
            holder.innerHTML = html;
            var fresh = holder.querySelector("#asks");
            var current = document.getElementById("asks");
            if (fresh && current) { current.replaceWith(fresh); }
          }
        })
        .finally(function () { refreshing = false; });
    });
  }
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT")) {
      if (target.type !== "radio" && target.type !== "checkbox") { return; }
    }
    var key = event.key;
    if (!key || key.length !== 1) { return; }
    var option = document.querySelector('[data-hotkey="' + CSS.escape(key) + '"]');
    if (!option) { return; }
    event.preventDefault();
    // A decision's button sends the form; an option is picked.
    if (option.tagName === "BUTTON") { option.click(); return; }
    option.click(); option.focus();
  });
  var zone = "";
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { zone = ""; }
  document.querySelectorAll("input[data-local-zone]").forEach(function (input) {
    if (!input.value && zone) { input.value = zone; }
  });
})();
