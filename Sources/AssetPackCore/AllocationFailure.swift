/// The one policy for a C library that cannot create its state (a zlib stream, a libdeflate
/// decompressor, an OpenSSL context): stop the process with the function named, as Swift itself
/// does when an allocation fails.
///
/// These calls fail only when memory is exhausted (their parameters are fixed by our code).
/// Throwing an `AssetPackError` instead would blame the pack (`.integrityFailure`,
/// `.unsupportedFormat`) or the file system (`.io`) for what is neither, and an app cannot
/// recover from running out of memory in the middle of a read any better than Swift's own
/// `Array` can. See docs/ARCHITECTURE.md ("Failure policies").
package func allocationFailed(_ function: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError("out of memory: \(function) failed", file: file, line: line)
}
