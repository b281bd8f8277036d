// Module controller builds Agent Sandbox's controller
// (sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller) for runbox's
// test cluster: scripts/kube/build.sh runs `go build` on that package from
// here. Nothing of it is copied into this repository.
//
// The module is built against the same k8s.io/* modules (v0.37.2; it asks
// for v0.36.4, which MVS raises), controller-runtime v0.25.3 (for v0.24.1)
// and the same versions of every module it shares with
// scripts/kube/apiserver, so that kube-apiserver's compiled packages in the
// shared Go build cache serve it too. Where agent-sandbox asks for a newer
// patch release than the API server's module graph has, the replace block
// below holds it at the API server's (update both together).
module github.com/runbox/runbox/scripts/kube/controller

go 1.26.0

tool sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cenkalti/backoff/v5 v5.0.3 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/emicklei/go-restful/v3 v3.13.0 // indirect
	github.com/evanphx/json-patch/v5 v5.9.11 // indirect
	github.com/felixge/fgprof v0.9.5 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/fxamacker/cbor/v2 v2.9.1 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/go-logr/zapr v1.3.0 // indirect
	github.com/go-openapi/jsonpointer v1.0.0 // indirect
	github.com/go-openapi/jsonreference v1.0.0 // indirect
	github.com/go-openapi/swag v0.27.1 // indirect
	github.com/go-openapi/swag/cmdutils v0.27.1 // indirect
	github.com/go-openapi/swag/conv v0.27.1 // indirect
	github.com/go-openapi/swag/fileutils v0.27.1 // indirect
	github.com/go-openapi/swag/jsonutils v0.27.1 // indirect
	github.com/go-openapi/swag/loading v0.27.1 // indirect
	github.com/go-openapi/swag/mangling v0.27.1 // indirect
	github.com/go-openapi/swag/netutils v0.27.1 // indirect
	github.com/go-openapi/swag/pools v0.27.1 // indirect
	github.com/go-openapi/swag/stringutils v0.27.1 // indirect
	github.com/go-openapi/swag/typeutils v0.27.1 // indirect
	github.com/go-openapi/swag/yamlutils v0.27.1 // indirect
	github.com/google/gnostic-models v0.7.0 // indirect
	github.com/google/pprof v0.0.0-20250403155104-27863c87afa6 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.29.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pmezard/go-difflib v1.0.1-0.20181226105442-5d4384ee4fb2 // indirect
	github.com/prometheus/client_golang v1.24.1 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.70.1 // indirect
	github.com/prometheus/procfs v0.21.1 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel v1.45.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace v1.45.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc v1.45.0 // indirect
	go.opentelemetry.io/otel/metric v1.45.0 // indirect
	go.opentelemetry.io/otel/sdk v1.45.0 // indirect
	go.opentelemetry.io/otel/trace v1.45.0 // indirect
	go.opentelemetry.io/proto/otlp v1.11.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.27.1 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/oauth2 v0.36.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/term v0.45.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	gomodules.xyz/jsonpatch/v2 v2.5.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260803160001-6ac0973c030d // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260803160001-6ac0973c030d // indirect
	google.golang.org/grpc v1.83.1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	gopkg.in/evanphx/json-patch.v4 v4.13.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	k8s.io/api v0.37.2 // indirect
	k8s.io/apiextensions-apiserver v0.37.2 // indirect
	k8s.io/apimachinery v0.37.2 // indirect
	k8s.io/client-go v0.37.2 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/kube-openapi v0.0.0-20260721132016-d427ff9ee9ad // indirect
	k8s.io/utils v0.0.0-20260626114624-be93311217bd // indirect
	sigs.k8s.io/agent-sandbox v1.0.1 // indirect
	sigs.k8s.io/controller-runtime v0.25.3 // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
	sigs.k8s.io/randfill v1.0.0 // indirect
	sigs.k8s.io/structured-merge-diff/v6 v6.4.2 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)

// The API server's versions of the modules both builds compile (see above).
replace (
	cel.dev/expr => cel.dev/expr v0.25.1
	github.com/GoogleCloudPlatform/opentelemetry-operations-go/detectors/gcp => github.com/GoogleCloudPlatform/opentelemetry-operations-go/detectors/gcp v1.32.0
	github.com/creack/pty => github.com/creack/pty v1.1.18
	github.com/fsnotify/fsnotify => github.com/fsnotify/fsnotify v1.9.0
	github.com/go-logr/logr => github.com/go-logr/logr v1.4.3
	github.com/google/gofuzz => github.com/google/gofuzz v1.0.0
	github.com/google/pprof => github.com/google/pprof v0.0.0-20260402051712-545e8a4df936
	github.com/klauspost/compress => github.com/klauspost/compress v1.19.0
	github.com/onsi/ginkgo/v2 => github.com/onsi/ginkgo/v2 v2.32.0
	github.com/onsi/gomega => github.com/onsi/gomega v1.40.0
	github.com/prometheus/client_golang => github.com/prometheus/client_golang v1.24.0
	github.com/prometheus/common => github.com/prometheus/common v0.70.0
	github.com/spiffe/go-spiffe/v2 => github.com/spiffe/go-spiffe/v2 v2.6.0
	github.com/stretchr/testify => github.com/stretchr/testify v1.11.1
	go.opentelemetry.io/contrib/detectors/gcp => go.opentelemetry.io/contrib/detectors/gcp v1.43.0
	go.opentelemetry.io/otel => go.opentelemetry.io/otel v1.44.0
	go.opentelemetry.io/otel/exporters/otlp/otlptrace => go.opentelemetry.io/otel/exporters/otlp/otlptrace v1.44.0
	go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc => go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc v1.44.0
	go.opentelemetry.io/otel/metric => go.opentelemetry.io/otel/metric v1.44.0
	go.opentelemetry.io/otel/sdk => go.opentelemetry.io/otel/sdk v1.44.0
	go.opentelemetry.io/otel/sdk/metric => go.opentelemetry.io/otel/sdk/metric v1.44.0
	go.opentelemetry.io/otel/trace => go.opentelemetry.io/otel/trace v1.44.0
	go.opentelemetry.io/proto/otlp => go.opentelemetry.io/proto/otlp v1.10.0
	go.yaml.in/yaml/v3 => go.yaml.in/yaml/v3 v3.0.4
	golang.org/x/crypto => golang.org/x/crypto v0.54.0
	golang.org/x/mod => golang.org/x/mod v0.37.0
	golang.org/x/net => golang.org/x/net v0.57.0
	golang.org/x/text => golang.org/x/text v0.40.0
	golang.org/x/tools => golang.org/x/tools v0.47.0
	golang.org/x/tools/go/expect => golang.org/x/tools/go/expect v0.1.1-deprecated
	google.golang.org/genproto/googleapis/api => google.golang.org/genproto/googleapis/api v0.0.0-20260526163538-3dc84a4a5aaa
	google.golang.org/genproto/googleapis/rpc => google.golang.org/genproto/googleapis/rpc v0.0.0-20260526163538-3dc84a4a5aaa
	google.golang.org/grpc => google.golang.org/grpc v1.82.1
	google.golang.org/protobuf => google.golang.org/protobuf v1.36.12-0.20260120151049-f2248ac996af
)
