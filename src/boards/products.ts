// Unipi product names as `model:` values. EVOK 3 only knows its register maps
// by board id (`00`, `08`, ...), one Modbus slave each, so a Neuron L203 is
// three devices in config.yaml. Here a product name stands for its board set;
// the table follows the one Unipi's autogen uses (product -> board ids).

export interface Product {
  name: string;
  family: 'Neuron' | 'Patron' | 'Unipi 1' | 'Extension section';
  /** Board ids, one Modbus slave each, at consecutive slave ids. */
  boards: readonly string[];
}

const table: Array<[Product['family'], string[], string[]]> = [
  ['Neuron', ['S103', 'S103_E', 'S103_I', 'S103_G'], ['00']],
  ['Neuron', ['M103'], ['00', '01']],
  ['Neuron', ['M203'], ['00', '08']],
  ['Neuron', ['M303'], ['00', '0A']],
  ['Neuron', ['M403'], ['00', '07']],
  ['Neuron', ['M503'], ['00', '0F']],
  ['Neuron', ['M523'], ['00', '13']],
  ['Neuron', ['L203'], ['00', '08', '08']],
  ['Neuron', ['L303'], ['00', '0A', '0A']],
  ['Neuron', ['L403'], ['00', '07', '07']],
  ['Neuron', ['L503'], ['00', '0F', '09']],
  ['Neuron', ['L513'], ['00', '0F', '0F']],
  ['Neuron', ['L523'], ['00', '13', '08']],
  ['Neuron', ['L533'], ['00', '13', '13']],
  ['Patron', ['S107', 'S117', 'S167'], ['00']],
  ['Patron', ['S207', 'S227'], ['01']],
  ['Patron', ['M207', 'M267'], ['00', '08']],
  ['Patron', ['M527', 'M567'], ['00', '13']],
  ['Patron', ['L207'], ['00', '08', '08']],
  ['Patron', ['L527'], ['00', '13', '08']],
  ['Unipi 1', ['UNIPI10'], ['UNIPI11']],
  // The expansion sections by their product names, for a single section.
  ['Extension section', ['E-8DI8RO'], ['01']],
  ['Extension section', ['E-14RO14RO'], ['07']],
  ['Extension section', ['E-16DI14RO'], ['08']],
  ['Extension section', ['E-14DI14RO'], ['09']],
  ['Extension section', ['E-16DI14DI'], ['0A']],
  ['Extension section', ['E-4AI4AO6DI5RO'], ['0F']],
  ['Extension section', ['E-4AI4AO4DI5RO'], ['13']],
];

export const products: ReadonlyMap<string, Product> = new Map(
  table.flatMap(([family, names, boards]) => names.map((name): [string, Product] => [name, { name, family, boards }])),
);
