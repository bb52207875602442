// memd ui: the only script. Asks before destructive forms (data-confirm); no inline handlers.
"use strict";
document.addEventListener("submit", function (event) {
  var form = event.target;
  var question = form && form.getAttribute && form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});
