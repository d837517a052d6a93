// Progressive enhancement of a running job's page: follow the job's server-sent events
// (the same stream as GET /v1/screenshot/{id}/stream) and show the result as soon as it is
// done. Without JavaScript the page refreshes itself (a <noscript> meta refresh) instead.
"use strict";
(function () {
  var status = document.getElementById("job-status");
  if (!status || !window.EventSource) return;
  var url = status.getAttribute("data-events");
  if (!url) return;
  var say = function (text) {
    var strong = status.querySelector("strong");
    if (strong) strong.textContent = text;
  };
  var done = false;
  var source = new EventSource(url);
  var finish = function () {
    if (done) return;
    done = true;
    source.close();
    // The server renders the result (image, download and share links): load it.
    window.location.reload();
  };
  source.addEventListener("status", function (e) {
    try { say(JSON.parse(e.data).status); } catch (err) { /* keep the last status */ }
  });
  source.addEventListener("done", function () { say("done"); finish(); });
  source.addEventListener("failed", function () { say("failed"); finish(); });
  source.addEventListener("timeout", function () { finish(); });
  source.onerror = function () {
    // The stream was refused or ended for good: fall back to what the page does without
    // JavaScript, a reload every 2 seconds.
    if (!done && source.readyState === EventSource.CLOSED) {
      done = true;
      setTimeout(function () { window.location.reload(); }, 2000);
    }
  };
})();
