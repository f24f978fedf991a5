import { describe, expect, it } from 'vitest';
import {
  allocateTaskSlotBuffers,
  CancelReason,
  SlotAllocator,
  SlotState,
  TaskSlots,
} from '../../src/pool/task-slots.js';

describe('TaskSlots', () => {
  it('walks a slot through assigned, running and done with the figures the worker wrote', () => {
    const slots = new TaskSlots(allocateTaskSlotBuffers(4));
    slots.assign(2, 77);
    expect(slots.state(2)).toBe(SlotState.ASSIGNED);
    expect(slots.begin(2, 77, 1234, 5e6, 1000)).toBe(true);
    expect(slots.state(2)).toBe(SlotState.RUNNING);
    expect(slots.tid(2)).toBe(1234);
    expect(slots.startCpuNs(2)).toBe(5e6);
    expect(slots.checkpoint(2, 77, 4000)).toBe(0);
    expect(slots.memoryBytes(2)).toBe(3000);
    slots.end(2, 77, 9e6, 500);
    expect(slots.state(2)).toBe(SlotState.DONE);
    expect(slots.endCpuNs(2)).toBe(9e6);
    expect(slots.memoryBytes(2)).toBe(0); // shrank below its start: not negative
  });

  it('passes a cancel request to the worker through checkpoint and cancelCode', () => {
    const slots = new TaskSlots(allocateTaskSlotBuffers(1));
    slots.assign(0, 5);
    slots.begin(0, 5, 1, 0, 0);
    slots.requestCancel(0, CancelReason.MEMORY);
    expect(slots.checkpoint(0, 5, 10)).toBe(CancelReason.MEMORY);
    expect(slots.cancelCode(0, 5)).toBe(CancelReason.MEMORY);
  });

  it('ignores writes from a worker whose task no longer owns the slot', () => {
    const slots = new TaskSlots(allocateTaskSlotBuffers(1));
    slots.assign(0, 1);
    slots.release(0);
    slots.assign(0, 2);
    slots.requestCancel(0, CancelReason.CPU);
    expect(slots.begin(0, 1, 99, 123, 456)).toBe(false);
    slots.end(0, 1, 999, 999);
    expect(slots.tid(0)).toBe(0);
    expect(slots.state(0)).toBe(SlotState.ASSIGNED);
    expect(slots.cancelCode(0, 1)).toBe(0);
    expect(slots.checkpoint(0, 1, 5)).toBe(0);
  });

  it('clears the previous figures and cancel flag when a slot is assigned again', () => {
    const slots = new TaskSlots(allocateTaskSlotBuffers(1));
    slots.assign(0, 1);
    slots.begin(0, 1, 10, 100, 100);
    slots.requestCancel(0, CancelReason.CPU);
    slots.release(0);
    slots.assign(0, 2);
    expect(slots.startCpuNs(0)).toBe(0);
    expect(slots.cancelCode(0, 2)).toBe(0);
  });

  it('lets exactly one of the worker and the main thread take a hand-over, and only the current one', () => {
    const slots = new TaskSlots(allocateTaskSlotBuffers(2));
    slots.assign(0, 1);
    slots.offer(0, 7);
    expect(slots.taken(0, 7)).toBe(false);
    expect(slots.claim(0, 7)).toBe(true); // the worker begins it
    expect(slots.taken(0, 7)).toBe(true);
    expect(slots.revoke(0, 7)).toBe(false); // too late to take back
    expect(slots.claim(0, 7)).toBe(false); // and nobody runs it twice
    slots.assign(1, 2);
    slots.offer(1, 8);
    expect(slots.revoke(1, 8)).toBe(true); // taken back before any worker began it
    expect(slots.claim(1, 8)).toBe(false); // the stale message is not run
    slots.offer(1, 9); // handed over again
    expect(slots.claim(1, 8)).toBe(false);
    expect(slots.claim(1, 9)).toBe(true);
    // A slot assigned afresh has no hand-over: a message without a number claims nothing.
    slots.assign(1, 3);
    expect(slots.claim(1, 0)).toBe(false);
    expect(slots.revoke(1, 0)).toBe(false);
    expect(slots.claim(1, 9)).toBe(false);
  });

  it('refuses a slot count outside 1..65536', () => {
    expect(() => allocateTaskSlotBuffers(0)).toThrow('slotCount must be an integer in 1..65536; received 0');
  });
});

describe('SlotAllocator', () => {
  it('hands out every slot once and -1 when none is left', () => {
    const a = new SlotAllocator(3);
    const got = [a.acquire(), a.acquire(), a.acquire()];
    expect(new Set(got)).toEqual(new Set([0, 1, 2]));
    expect(a.acquire()).toBe(-1);
    a.release(1);
    expect(a.available).toBe(1);
    expect(a.acquire()).toBe(1);
  });
});
