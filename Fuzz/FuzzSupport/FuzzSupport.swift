// What every libFuzzer target shares: handing control to libFuzzer's driver, a scratch file for
// targets that open a path, and the message a plain (non-fuzzing) build prints.
import Foundation

/// The one-input callback libFuzzer calls.
public typealias FuzzCallback = @convention(c) (UnsafePointer<UInt8>, Int) -> CInt

#if FUZZING
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: FuzzCallback
) -> CInt
#endif

#if FUZZING
/// Runs libFuzzer's driver over `callback`. SwiftPM links a release executable with `main`
/// aliased to `<Target>_main`, so each target exports that symbol and calls this.
public func runFuzzer(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ callback: FuzzCallback
) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, callback)
}
#endif

/// What a target built without `make fuzz` prints.
public func fuzzStub() {
    print("fuzz target: build and run it with `make fuzz`")
}

/// A per-process file in /dev/shm for targets whose code under test opens a path.
public struct FuzzScratch: Sendable {
    /// The file's path.
    public let path: String

    /// A scratch file named after the target, e.g. `FuzzScratch("zip", ext: "zip")`.
    public init(_ name: String, ext: String) {
        path = "/dev/shm/assetpack-fuzz-\(name)-\(getpid()).\(ext)"
    }

    /// Replaces the file's content with the fuzzer's input; false if it cannot be written.
    public func write(_ data: UnsafePointer<UInt8>, _ size: Int) -> Bool {
        FileManager.default.createFile(atPath: path, contents: Data(bytes: data, count: size))
    }
}
