// Small behaviours of the dashboard; htmx does the rest.
(function () {
  "use strict";

  // A slider shows its value as it moves (the form saves it, see _retrieval.html), as
  // the page writes it (floatformat): data-decimals digits after a French comma.
  function numberShown(input) {
    var decimals = parseInt(input.dataset.decimals || "", 10);
    if (isNaN(decimals)) return input.value;
    return Number(input.value).toFixed(decimals).replace(".", ",");
  }

  document.addEventListener("input", function (event) {
    var input = event.target;
    if (input.matches && input.matches("input[type=range][data-output]")) {
      var output = document.getElementById(input.dataset.output);
      if (output) output.value = numberShown(input);
    }
  });

  // "Fermer" buttons empty the element they name.
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-clear]");
    if (button) {
      var target = document.querySelector(button.dataset.clear);
      if (target) target.innerHTML = "";
    }
  });

  function flash(text) {
    var box = document.getElementById("flash");
    if (!box) return;
    box.textContent = text;
    box.hidden = false;
    window.clearTimeout(flash.timer);
    flash.timer = window.setTimeout(function () { box.hidden = true; }, 8000);
  }

  // Errors htmx does not swap (5xx, 403...) get a French message instead of silence.
  document.addEventListener("htmx:responseError", function (event) {
    var status = event.detail.xhr ? event.detail.xhr.status : 0;
    if (status === 403) {
      flash("Action refusée (403) : la session a peut-être expiré. Rechargez la page.");
    } else if (status === 400 && event.detail.xhr.responseText.length < 500) {
      // A short French fragment (makilab/request_encoding.py): say its text.
      // DOMParser runs no script nor handler of what it parses.
      var parsed = new DOMParser().parseFromString(event.detail.xhr.responseText, "text/html");
      flash(parsed.body.textContent.trim() || "Requête invalide (400).");
    } else if (status === 404) {
      flash("Introuvable (404) : l'élément a peut-être été supprimé. Rechargez la page.");
    } else {
      flash("Le serveur a répondu une erreur (" + status + "). Réessayez dans un instant.");
    }
  });
  // After a swap the keyboard's place stays in the part that changed (QA: a refused form
  // swapped in left the focus on the page's body, the next Tab past it): the first field
  // marked invalid, else the element focused before if it is still there (htmx keeps it
  // by id), else the swapped part's notice or first control.
  document.addEventListener("htmx:afterSettle", function (event) {
    // htmx dispatches afterSettle on each element it settled (the new one after an
    // outerHTML swap), and names it in detail.elt too: the part that changed.
    var part = event.target;
    if (!part || !part.querySelector) return;
    var invalid = part.querySelector("[aria-invalid=true]");
    if (invalid) {
      invalid.focus();
      return;
    }
    if (document.activeElement && document.activeElement !== document.body) return;
    var next = part.querySelector(
      "[role=status], [role=alert], .notice, a[href], button, input, select, textarea, summary"
    );
    if (next) {
      if (!next.matches("a[href], button, input, select, textarea, summary")) {
        next.setAttribute("tabindex", "-1");
      }
      next.focus();
    }
  });
  document.addEventListener("htmx:sendError", function () {
    flash("Serveur injoignable : vérifiez que Makilab tourne, puis réessayez.");
  });
})();
