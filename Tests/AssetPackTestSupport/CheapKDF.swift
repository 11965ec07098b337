import AssetPackCore

extension ContainerKDF {
    /// scrypt N = 2^10, r = 8, p = 1: what tests protect their containers' passwords with. The
    /// default, N = 2^15, costs ~70 ms and 32 MiB at every open, and those opens were a quarter of
    /// the fast tier's CPU; the code path is the same at every cost. The default itself is tested
    /// through the binary (`ScryptCostCLITests`, which packs with `CLI.run(..., cheapKDF: false)`).
    public static let forTests = ContainerKDF.scrypt(cost: 10)
}

extension PackOptions {
    /// `PackOptions()` with `ContainerKDF.forTests`, and no source status cache: every source is
    /// read and every kept chunk checked, whatever the age of the test's files (the cache's own
    /// tests turn it on).
    public static var forTests: PackOptions {
        var options = PackOptions()
        options.container.kdf = .forTests
        options.sourceStatusCache = nil
        return options
    }
}
