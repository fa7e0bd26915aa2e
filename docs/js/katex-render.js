// Formulas with the vendored KaTeX (docs/vendor/katex), no network needed.
// pymdownx.arithmatex (generic mode) leaves \( ... \) in <span class="arithmatex">
// and \[ ... \] in <div class="arithmatex">; each is replaced by KaTeX's rendering.
// Notebook pages (mkdocs-jupyter) keep $...$ in their Markdown cells and LaTeX
// outputs: auto-render finds those.
(function () {
  function renderArithmatex(root) {
    root.querySelectorAll(".arithmatex").forEach(function (el) {
      var tex = el.textContent.trim();
      var display = el.tagName === "DIV";
      tex = tex.replace(/^\\[\[(]/, "").replace(/\\[\])]$/, "");
      try {
        katex.render(tex, el, { displayMode: display, throwOnError: false });
      } catch (err) {
        console.error(err);
      }
    });
  }
  function renderAll() {
    renderArithmatex(document.body);
    if (typeof renderMathInElement === "function") {
      renderMathInElement(document.body, {
        delimiters: [
          { left: "$$", right: "$$", display: true },
          { left: "$", right: "$", display: false },
          { left: "\\[", right: "\\]", display: true },
          { left: "\\(", right: "\\)", display: false },
        ],
        ignoredClasses: ["arithmatex", "katex"],
        ignoredTags: ["script", "noscript", "style", "textarea", "pre", "code"],
        throwOnError: false,
      });
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", renderAll);
  } else {
    renderAll();
  }
})();
