// Work for the reaction-time benchmark: spins until cancelled, either checking for cancellation every
// millisecond (cooperative: soft cancellation stops it) or never (only termination stops it).
export function handle(request, context) {
  const end = Date.now() + 10_000;
  let next = Date.now();
  while (Date.now() < end) {
    if (request.body.cooperative && Date.now() >= next) {
      context.checkpoint();
      next = Date.now() + 1;
    }
  }
  return { finished: true };
}
