// The package ships no types: its default export parses the Prometheus text format into prom2json's shape.
declare module 'parse-prometheus-text-format' {
  export default function parsePrometheusTextFormat(text: string): unknown[];
}
