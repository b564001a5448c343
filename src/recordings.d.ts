/** `import text from '….gpx' | '….csv' with { type: 'text' }`: the file's text, embedded by `bun build --compile`. */
declare module '*.gpx' {
  const text: string
  export default text
}
declare module '*.csv' {
  const text: string
  export default text
}
