// Fetches bytes [0, COUNT) of URL and discards them, with the client AssetPack uses
// (`HTTPRangeClient` over libcurl) or with a bare Foundation `URLSession` data task, so that
// hyperfine can set both against `curl -r` (make bench-remote; docs/REMOTE.md, "Transport").
// Usage: TransportBench URL COUNT client|urlsession
import AssetPackHTTP
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let arguments = CommandLine.arguments
guard arguments.count == 4, let url = URL(string: arguments[1]), let count = UInt64(arguments[2]),
    ["client", "urlsession"].contains(arguments[3])
else {
    FileHandle.standardError.write(Data("usage: TransportBench URL COUNT client|urlsession\n".utf8))
    exit(64)
}

/// Body bytes received.
final class Received: @unchecked Sendable {
    private let lock = NSLock()
    private var total: UInt64 = 0
    func add(_ n: Int) { lock.withLock { total += UInt64(n) } }
    var value: UInt64 { lock.withLock { total } }
}
let received = Received()

if arguments[3] == "client" {
    let client = try HTTPRangeClient(url: url)
    try client.fetch(0..<count, gathering: false) { piece, _ in received.add(piece.count) }
} else {
    final class Delegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            received.add(data.count)
        }
        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            done.signal()
        }
    }
    let delegate = Delegate()
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    let session = URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: queue)
    var request = URLRequest(url: url)
    request.setValue("bytes=0-\(count - 1)", forHTTPHeaderField: "Range")
    session.dataTask(with: request).resume()
    delegate.done.wait()
}
guard received.value == count else {
    FileHandle.standardError.write(Data("received \(received.value) of \(count) bytes\n".utf8))
    exit(1)
}
