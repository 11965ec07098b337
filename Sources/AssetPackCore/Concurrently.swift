import Dispatch
import Synchronization

// Work split across the cores, for the modules that read and write packs.

/// Runs `body(0..<tasks)` on all cores and rethrows the first error (as it was thrown: a
/// `CancellationError` stays one). The workers run under the caller's ``Cancellation``, so a
/// cancelled read stops in them too.
package func concurrently(_ tasks: Int, _ body: (Int) throws -> Void) throws {
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

/// The part of `0..<count` task `task` of `tasks` takes: consecutive, as even as integers allow,
/// every index in exactly one part.
package func share(_ task: Int, of tasks: Int, count: Int) -> Range<Int> {
    (count * task / tasks)..<(count * (task + 1) / tasks)
}
