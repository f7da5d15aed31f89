// rootrank report page script: turns clicks and Enter/Space on data-* elements into messages
// for the extension (open a log line, copy, run in a terminal, open an entry). No network.
(function () {
  const vscode = acquireVsCodeApi();
  function textOf(id) {
    const el = document.getElementById(id);
    return el ? el.textContent : '';
  }
  function activate(target) {
    const el = target.closest('[data-path],[data-copy-target],[data-run-target],[data-signature]');
    if (!el) return false;
    if (el.dataset.copyTarget) {
      vscode.postMessage({ type: 'copy', text: textOf(el.dataset.copyTarget) });
      const old = el.textContent;
      el.textContent = 'Copied';
      setTimeout(() => (el.textContent = old), 1200);
    } else if (el.dataset.runTarget) {
      vscode.postMessage({ type: 'run', command: textOf(el.dataset.runTarget) });
    } else if (el.dataset.signature) {
      vscode.postMessage({ type: 'entry', id: el.dataset.signature });
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
  document.addEventListener('keydown', (event) => {
    if ((event.key === 'Enter' || event.key === ' ') && event.target.closest && event.target.closest('.tl-mark')) {
      if (activate(event.target)) event.preventDefault();
    }
  });
  vscode.postMessage({ type: 'ready' });
})();
