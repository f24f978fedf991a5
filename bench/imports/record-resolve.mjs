// Module hooks (node:module register) that report every URL the ESM loader resolves, through the
// port given at registration. Used by loaded-modules.mjs.
let port;
export function initialize(data) {
  port = data.port;
}
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  port.postMessage(result.url);
  return result;
}
