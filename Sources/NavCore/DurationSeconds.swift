extension Duration {
    /// The duration as a number [seconds].
    public var inSeconds: Double {
        Double(self.components.seconds) + Double(self.components.attoseconds) / 1e18
    }
}
