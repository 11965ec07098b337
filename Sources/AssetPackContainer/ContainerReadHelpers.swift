import AssetPackCore
import Dispatch
import Foundation
import Synchronization

/// Runs `body(0..<tasks)` on all cores and rethrows the first error (as it was thrown: a
/// `CancellationError` stays one). The workers run under the caller's ``Cancellation``, so a
/// cancelled read stops in them too.
func concurrently(_ tasks: Int, _ body: (Int) throws -> Void) throws {
    if tasks == 1 { return try body(0) }
    let failure = Mutex<(any Error)?>(nil)
    let cancellation = Cancellation.current
    withoutActuallyEscaping(body) { body in
        // The tasks write disjoint parts of caller-owned buffers; `body` is not Sendable only
        // because it captures those pointers.
        let work = UncheckedSendable(body)
        DispatchQueue.concurrentPerform(iterations: tasks) { task in
            do { try Cancellation.$current.withValue(cancellation) { try work.value(task) } } catch {
                failure.withLock { if $0 == nil { $0 = error } }
            }
        }
    }
    if let e = failure.withLock({ $0 }) { throw e }
}

private struct UncheckedSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// Fills `buffer` from `source` at `offset`; the end of the pack first is an integrity failure
/// (truncation).
func readExactly(_ source: any ByteSource, _ buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws {
    if try source.read(into: buffer, at: offset) < buffer.count {
        throw AssetPackError(.integrityFailure, "container is truncated")
    }
}

/// Reads exactly `count` bytes at `offset`.
func preadArray(_ source: any ByteSource, count: Int, at offset: UInt64) throws -> [UInt8] {
    try [UInt8](unsafeUninitializedCapacity: count) { buf, n in
        try readExactly(source, UnsafeMutableRawBufferPointer(buf), at: offset)
        n = count
    }
}
