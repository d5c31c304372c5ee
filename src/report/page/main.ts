/* The report page: draws every map and chart there is data for, and redraws the charts on resize. */

(window as unknown as { roadEtlReport: unknown }).roadEtlReport = {
  maps,
  /** The charts by their element's id, once drawn. */
  charts: () =>
    Object.fromEntries(charts.map(({ chart, element }) => [element.id, chart] as const)),
};

const drawn = [
  drawSignsMap(),
  drawBicycleMap(),
  drawEvents(),
  drawLiveChanges(),
  drawDaily(),
  drawProfile(),
].filter(Boolean).length;

let resizing: number | undefined;
window.addEventListener('resize', () => {
  window.clearTimeout(resizing);
  resizing = window.setTimeout(() => {
    for (const { chart, element } of charts)
      chart.setSize({ width: widthOf(element), height: 260 });
  }, 150);
});

document.body.dataset['drawn'] = String(drawn);
