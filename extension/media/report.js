// rootrank report page script: turns clicks and Enter/Space on data-* elements into messages
// for the extension (open a log line or the user's traceback frame, copy, run in a terminal, open an entry, open a reference
// in the browser). The page itself fetches nothing.
(function () {
  const vscode = acquireVsCodeApi();
  function textOf(id) {
    const el = document.getElementById(id);
    return el ? el.textContent : '';
  }
  function activate(target) {
    const el = target.closest('[data-path],[data-frame],[data-copy-target],[data-run-target],[data-signature],[data-url]');
    if (!el) return false;
    if (el.dataset.copyTarget) {
      vscode.postMessage({ type: 'copy', text: textOf(el.dataset.copyTarget) });
      const old = el.textContent;
      el.textContent = 'Copied';
      setTimeout(() => (el.textContent = old), 1200);
    } else if (el.dataset.runTarget) {
      vscode.postMessage({ type: 'run', command: textOf(el.dataset.runTarget) });
    } else if (el.dataset.url) {
      vscode.postMessage({ type: 'external', url: el.dataset.url });
    } else if (el.dataset.signature) {
      vscode.postMessage({ type: 'entry', id: el.dataset.signature });
    } else if (el.dataset.frame) {
      vscode.postMessage({ type: 'frame', file: el.dataset.frame, line: Number(el.dataset.line || 1) });
    } else if (el.dataset.path) {
      vscode.postMessage({ type: 'open', path: el.dataset.path, line: Number(el.dataset.line || 1) });
    } else {
      return false;
    }
    return true;
  }
  document.addEventListener('click', (event) => {
    if (activate(event.target)) event.preventDefault();
  });
  // Marks are <button>s and links <a href>: Enter and Space reach the click handler natively.
  // Timeline: the CSP forbids inline styles in the markup, so positions (percent of the
  // lane) come from data-x and are set through the CSSOM here.
  function place() {
    document.querySelectorAll('.tl-mark[data-x], .tl-tick[data-x]').forEach((el) => {
      el.style.left = `${Number(el.dataset.x)}%`;
    });
    document.querySelectorAll('.tl-tip[data-x]').forEach((el) => {
      const x = Number(el.dataset.x);
      if (el.classList.contains('tl-tip-end')) {
        el.style.right = `${100 - x}%`;
      } else {
        el.style.left = `${x}%`;
      }
    });
  }
  // Keep a shown tooltip inside the page (no sideways scroll at any width).
  function fit(tip) {
    tip.style.transform = '';
    const r = tip.getBoundingClientRect();
    const width = document.documentElement.clientWidth;
    let dx = 0;
    if (r.right > width - 4) dx = width - 4 - r.right;
    if (r.left + dx < 4) dx = 4 - r.left;
    if (dx) tip.style.transform = `translateX(${dx}px)`;
  }
  function showTip(event) {
    const mark = event.target.closest && event.target.closest('.tl-mark');
    const tip = mark && mark.nextElementSibling;
    if (tip && tip.classList.contains('tl-tip')) requestAnimationFrame(() => fit(tip));
  }
  document.addEventListener('mouseover', showTip);
  document.addEventListener('focusin', showTip);
  place();
  vscode.postMessage({ type: 'ready' });
})();
