// memd ui: the only script. Asks before destructive forms (data-confirm), and runs the bulk
// selection of the Memories page (select all, the count); no inline handlers.
"use strict";
document.addEventListener("submit", function (event) {
  var form = event.target;
  var question = form && form.getAttribute && form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});

function picks() {
  return Array.prototype.slice.call(document.querySelectorAll("input.pick[name=id]"));
}

function showCount() {
  var out = document.getElementById("selected-count");
  if (!out) { return; }
  var n = picks().filter(function (box) { return box.checked; }).length;
  out.textContent = n ? n + " selected" : "";
}

document.addEventListener("change", function (event) {
  var box = event.target;
  if (box && box.id === "select-all") {
    picks().forEach(function (pick) { pick.checked = box.checked; });
  }
  if (box && (box.id === "select-all" || box.classList.contains("pick"))) {
    showCount();
  }
});
