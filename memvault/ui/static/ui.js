// memvault's page: keyboard shortcuts and confirmations. Everything works without it.
// "/" search, "j"/"k" next/previous item of a list, "Enter" opens it (the browser's own), "t" the time picker.
(function () {
  "use strict";
  function items() {
    var list = document.querySelector("[data-keys]");
    return list ? Array.prototype.slice.call(list.querySelectorAll("tbody tr a:first-of-type, li > a:first-of-type, li .said a")) : [];
  }
  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) { return; }
    var links = items();
    var at = links.indexOf(document.activeElement);
    if (event.key === "/") {
      event.preventDefault();
      document.getElementById("q").focus();
    } else if (event.key === "t") {
      event.preventDefault();
      document.getElementById("at").focus();
    } else if ((event.key === "j" || event.key === "k") && links.length) {
      event.preventDefault();
      var next = event.key === "j" ? Math.min(at + 1, links.length - 1) : Math.max(at - 1, 0);
      links[next].focus();
    }
  });
  document.addEventListener("submit", function (event) {
    var button = event.submitter;
    var question = button && button.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { event.preventDefault(); }
  });
}());
