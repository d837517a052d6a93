// What the page shows once its consent platform recorded an answer: the marker in the top-left
// corner turns green for a refusal, orange for an acceptance (gray: no answer).
window.__answer = function (kind) {
  document.documentElement.dataset.consent = kind;
  document.getElementById('marker').style.background = kind === 'rejected' ? '#00c000' : '#ff8800';
  document.cookie = 'fixture_consent=' + kind + '; path=/';
};
