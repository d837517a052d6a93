// Progressive enhancement for the website: "Copy" buttons next to secrets. Without
// JavaScript the buttons stay hidden and the secret remains selectable text.
"use strict";
document.querySelectorAll("button[data-copy]").forEach(function (button) {
  var id = button.getAttribute("data-copy");
  var field = document.getElementById(id);
  var status = document.getElementById(id + "-status");
  if (!field) return;
  var say = function (text) { if (status) status.textContent = text; };
  var fallback = function () {
    field.focus();
    field.select();
    var copied = false;
    try { copied = document.execCommand("copy"); } catch (e) { copied = false; }
    say(copied ? "Copied." : "Selected: press Ctrl+C (or Cmd+C) to copy.");
  };
  button.hidden = false;
  button.addEventListener("click", function () {
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(function () { say("Copied."); }, fallback);
    } else {
      fallback();
    }
  });
});
