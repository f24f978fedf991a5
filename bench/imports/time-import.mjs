// Prints the ms that `await import(argv[2])` takes in a fresh process (nothing imported before).
const started = performance.now();
await import(process.argv[2]);
console.log((performance.now() - started).toFixed(3));
