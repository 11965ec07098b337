import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SIGINT and SIGTERM, handled on a dispatch queue rather than in a signal handler.
package enum InterruptSignals {
    /// The signal sources installed (kept alive for the process).
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []
    /// Whether the handler ran.
    private static let handled = Atomic<Bool>(false)

    /// Runs `handler` when SIGINT or SIGTERM arrives, then dies of that signal. Call once.
    package static func onInterrupt(_ handler: @escaping @Sendable () -> Void) {
        // A parent may have started us with these blocked (a dispatch worker thread's mask is
        // inherited through posix_spawn); then they would never arrive.
        var mask = sigset_t()
        sigemptyset(&mask)
        sigaddset(&mask, SIGINT)
        sigaddset(&mask, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &mask, nil)
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)  // delivered to the dispatch source instead
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                // Once: a second signal while the first is handled waits for it to end the process.
                guard !handled.exchange(true, ordering: .sequentiallyConsistent) else { return }
                handler()
                // Die of it from this thread: libdispatch's threads block signals, so a signal
                // sent to the process could find no thread to take it and come back to this
                // source (a newcomer saw thousands of "interrupted" lines).
                signal(signalNumber, SIG_DFL)
                var only = sigset_t()
                sigemptyset(&only)
                sigaddset(&only, signalNumber)
                pthread_sigmask(SIG_UNBLOCK, &only, nil)
                raise(signalNumber)
                _exit(128 + signalNumber)
            }
            source.resume()
            sources.append(source)
        }
    }
}
