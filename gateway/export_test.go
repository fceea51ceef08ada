package gateway

// RestartOnly exposes restartOnly to the external tests.
var RestartOnly = restartOnly
