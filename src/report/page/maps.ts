/* The report page's maps (Leaflet): the signs of each current state, the bicycle locations. */

/** The maps, for a reader's console (and the report's tests): window.roadEtlReport.maps. */
const maps: Record<string, L.Map> = {};

function newMap(element: HTMLElement): L.Map {
  const map = L.map(element, {
    preferCanvas: true,
    attributionControl: data.tiles !== null,
    zoomSnap: 0.25,
  });
  if (data.tiles)
    L.tileLayer(data.tiles.url, { attribution: esc(data.tiles.attribution), maxZoom: 19 }).addTo(
      map,
    );
  if (data.outline) {
    // Beneath the marks, and drawn apart from their canvas (SVG).
    const pane = map.createPane('outline');
    pane.style.zIndex = '250';
    const options: L.GeoJSONOptions & L.PathOptions = {
      pane: 'outline',
      renderer: L.svg({ pane: 'outline' }),
      interactive: false,
      style: () => ({ color: '#9aa4b1', weight: 1, fillColor: '#ffffff', fillOpacity: 1 }),
    };
    L.geoJSON(data.outline, options).addTo(map);
  }
  L.control.scale({ imperial: false }).addTo(map);
  return map;
}

function fit(map: L.Map, points: [number, number][]): void {
  if (points.length === 0) map.setView([52.2, 5.3], 7);
  else map.fitBounds(L.latLngBounds(points), { padding: [20, 20], maxZoom: 15 });
}

function categoryOf(code: string | null): string {
  const match = /^[A-Z]+/.exec((code ?? '').toUpperCase());
  return match ? match[0] : '(none)';
}

function signLayer(state: SignState): { layer: L.LayerGroup; points: [number, number][] } {
  const p = state.points;
  const layer = L.layerGroup();
  const points: [number, number][] = [];
  for (let i = 0; i < p.id.length; i++) {
    const at: [number, number] = [p.latitude[i]!, p.longitude[i]!];
    points.push(at);
    const colour = data.colors[categoryOf(p.rvvCode[i] ?? null)] ?? data.colors['other'] ?? '#333';
    L.circleMarker(at, {
      radius: 4,
      color: '#fff',
      weight: 0.5,
      fillColor: colour,
      fillOpacity: 0.85,
    })
      .bindPopup(() => {
        const image = p.image[i];
        return (
          popupTable([
            ['Sign', p.id[i]],
            ['RVV code', p.rvvCode[i]],
            ['Text', p.text[i]],
            ['Road', p.road[i]],
            ['Town', p.town[i]],
            ['Position', `${at[0]}, ${at[1]}`],
          ]) +
          (image && /^https?:\/\//.test(image)
            ? `<a href="${esc(image)}" target="_blank" rel="noopener noreferrer">Image of the sign</a>`
            : '')
        );
      })
      .addTo(layer);
  }
  return { layer, points };
}

function drawSignsMap(): boolean {
  const element = document.getElementById('signs-map');
  const states = data.signs?.states ?? [];
  if (!element || states.length === 0) return false;
  const map = newMap(element);
  maps['signs'] = map;
  const layers = states.map(signLayer);
  let shown = 0;
  layers[0]!.layer.addTo(map);
  fit(map, layers[0]!.points);
  for (const input of document.querySelectorAll<HTMLInputElement>('input[name="sign-state"]')) {
    input.addEventListener('change', () => {
      const next = Number(input.value);
      if (next === shown || !layers[next]) return;
      map.removeLayer(layers[shown]!.layer);
      layers[next].layer.addTo(map);
      fit(map, layers[next].points);
      for (const block of document.querySelectorAll<HTMLElement>('#signs .state'))
        block.hidden = block.dataset['state'] !== String(next);
      shown = next;
    });
  }
  return true;
}

function drawBicycleMap(): boolean {
  const element = document.getElementById('bicycle-map');
  const locations = data.bicycle?.points ?? [];
  if (!element || locations.length === 0) return false;
  const map = newMap(element);
  maps['bicycle'] = map;
  const largest = Math.max(1, ...locations.map((l) => l.cyclists ?? 0));
  // Largest first, so that small circles stay clickable on top of large ones.
  const ordered = [...locations].sort((a, b) => (b.cyclists ?? -1) - (a.cyclists ?? -1));
  for (const l of ordered) {
    const measured = l.cyclists !== null;
    L.circleMarker([l.latitude, l.longitude], {
      radius: measured ? 4 + 18 * Math.sqrt((l.cyclists ?? 0) / largest) : 3,
      color: measured ? '#0b4f9c' : '#8a929c',
      weight: 1,
      fillColor: measured ? '#1f6feb' : '#c4cad1',
      fillOpacity: measured ? 0.45 : 0.8,
    })
      .bindPopup(() =>
        popupTable([
          ['Location', l.id],
          ['Name', l.name],
          ['Authority', l.authority],
          [
            'Cyclists',
            l.cyclists === null ? 'no counts in the period' : integer.format(l.cyclists),
          ],
          [
            'Completeness',
            l.completeness === null ? null : `${decimal.format(l.completeness * 100)}%`,
          ],
        ]),
      )
      .addTo(map);
  }
  fit(
    map,
    locations.map((l) => [l.latitude, l.longitude]),
  );
  return true;
}
