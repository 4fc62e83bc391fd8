/** A two-way map between an enum's public names and its wire values (UNSPECIFIED has no name). */
export function nameMap<Name extends string, Value extends number>(entries: Record<Name, Value>) {
  const names = Object.keys(entries) as Name[];
  const byValue = new Map<number, Name>(names.map((name) => [entries[name], name]));
  return {
    names: names as readonly Name[],
    /** The wire value of a public name. */
    valueOf: (name: Name): Value => entries[name],
    /** The public name of a wire value; undefined for UNSPECIFIED or an unknown number. */
    nameOf: (value: number): Name | undefined => byValue.get(value),
    isName: (text: string): text is Name => Object.hasOwn(entries, text),
  };
}
