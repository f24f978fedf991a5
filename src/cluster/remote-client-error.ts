/** A data node's 4xx answer that is the client's to fix; the server passes status and body on. */
export class RemoteClientError extends Error {
  readonly status: number;
  readonly body: Readonly<Record<string, unknown>>;
  readonly nodeId: string;
  constructor(
    nodeId: string,
    status: number,
    body: Readonly<Record<string, unknown>> | undefined,
    reason: string,
  ) {
    super(`data node [${nodeId}] answered ${status}: ${reason}`);
    this.nodeId = nodeId;
    this.status = status;
    this.body = body ?? { error: { type: 'exception', reason }, status };
  }
}
