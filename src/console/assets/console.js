// The console's only script: live figures without reload, and the snapshot slider.
// Every value goes in with textContent: nothing read from the server becomes HTML.

const POLL_MS = 1000;
let previous;

function setLive(name, text) {
  for (const element of document.querySelectorAll(`[data-live="${CSS.escape(name)}"]`)) element.textContent = text;
}

async function refresh() {
  try {
    const response = await fetch('/api/live', { cache: 'no-store' });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const live = await response.json();
    const at = Date.parse(live.at);
    setLive('appended', live.appendedPerSecond.toFixed(1));
    for (const projection of live.projections) {
      setLive(`applied:${projection.projection}`, String(projection.eventsApplied));
      setLive(`lag:${projection.projection}`, String(projection.lagEvents));
      setLive(`lag-seconds:${projection.projection}`, projection.lagSeconds.toFixed(1));
      const before = previous?.projections.find((each) => each.projection === projection.projection);
      if (before !== undefined && at > previous.at) {
        const rate = (projection.eventsApplied - before.eventsApplied) / ((at - previous.at) / 1000);
        setLive(`rate:${projection.projection}`, rate.toFixed(1));
      }
    }
    previous = { at, projections: live.projections };
    document.body.dataset.live = 'ok';
  } catch {
    document.body.dataset.live = 'failing';
  } finally {
    setTimeout(refresh, POLL_MS);
  }
}

function wireSlider() {
  const slider = document.querySelector('[data-slider]');
  if (slider === null) return;
  const output = document.getElementById('at-value');
  slider.addEventListener('input', () => {
    output.textContent = slider.value;
  });
  slider.addEventListener('change', () => slider.form.requestSubmit());
}

wireSlider();
void refresh();
