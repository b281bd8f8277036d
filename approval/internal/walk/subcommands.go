package walk

// subcommandNames lists, for tools with subcommands, the subcommands the
// gate knows. Options before the subcommand that the gate does not know
// may take a value ("git --foo bar push"), so the subcommand is the first
// operand that is a known one; the words skipped on the way are kept as
// global options. A tool whose operands name no known subcommand (a git
// alias, a plugin) has its first operand as the subcommand, as before.
//
// The lists hold every subcommand a rule names, so no option value can
// hide one; a missing entry can only make the gate look further and ask
// more, never less.
var subcommandNames = map[string]map[string]bool{
	"docker": dockerSubcommands,
	"compose": setOf(`attach build commit config cp create down events exec export images kill logs ls pause port ps
		publish pull push restart rm run scale start stats stop top unpause up version viz wait watch alpha`),
	"git": setOf(`add am annotate apply archive bisect blame branch bugreport bundle cat-file check-attr check-ignore
		check-mailmap check-ref-format checkout checkout-index cherry cherry-pick citool clean clone column commit
		commit-graph commit-tree config count-objects credential daemon describe diagnose diff diff-files diff-index
		diff-tree difftool fast-export fast-import fetch fetch-pack filter-branch fmt-merge-msg for-each-ref
		for-each-repo format-patch fsck gc get-tar-commit-id grep gui hash-object help hook index-pack init
		instaweb interpret-trailers log ls-files ls-remote ls-tree mailinfo mailsplit maintenance merge merge-base
		merge-file merge-index merge-tree mergetool mktag mktree multi-pack-index mv name-rev notes pack-objects
		pack-refs prune prune-packed pull push range-diff read-tree rebase reflog remote repack replace replay
		request-pull rerere reset restore rev-list rev-parse revert rm send-email send-pack shortlog show
		show-branch show-index show-ref sparse-checkout stash status stripspace submodule switch symbolic-ref tag
		unpack-file unpack-objects update-index update-ref update-server-info upload-archive upload-pack var
		verify-commit verify-pack verify-tag whatchanged worktree write-tree lfs flow`),
	"kubectl": setOf(`alpha annotate api-resources api-versions apply attach auth autoscale certificate cluster-info
		completion config cordon cp create debug delete describe diff drain edit events exec explain expose get
		kustomize label logs options patch plugin port-forward proxy replace rollout run scale set taint top
		uncordon version wait`),
	"helm": setOf(`completion create dependency dep env get history install lint list ls package plugin pull fetch cm-push
		push registry repo rollback search show status template test uninstall un del delete upgrade verify version`),
	"terraform": terraformSubcommands,
	"npm": setOf(`access adduser audit bin bugs cache ci cit clean-install completion config c dedupe ddp deprecate
		diff dist-tag docs doctor edit exec x explain why explore find-dupes fund get help hook init create
		install i add in isntall install-ci-test install-test it link ln login logout ls list la ll org outdated
		owner pack ping pkg prefix profile prune publish query rebuild rb repo restart root run run-script rum urn
		sbom search s se find set shrinkwrap star stars start stop team test t tst token uninstall un unlink remove
		rm r unpublish unstar update up upgrade version view v info show whoami`),
	"pnpm": setOf(`add install i remove rm uninstall un update up upgrade run exec dlx test t link ln unlink list ls
		outdated audit store prune publish pack why env setup import rebuild rb root bin patch patch-commit deploy
		create init licenses config doctor fetch server`),
	"yarn": setOf(`add remove install upgrade up run global exec dlx why workspace workspaces info init link unlink
		list outdated pack publish cache config bin audit autoclean check import licenses login logout owner policy
		tag team test unplug version versions set plugin node npm create`),
	"bun": setOf(`run install i add a remove rm un update upgrade x exec test build init create link unlink pm
		outdated publish patch repl why audit info`),
	"pip": setOf(`install uninstall download freeze inspect list show check config search cache index wheel hash
		completion debug help lock`),
	"pipx": setOf(`install uninstall uninstall-all upgrade upgrade-all reinstall reinstall-all list run inject
		uninject ensurepath environment interpreter`),
	"uv": setOf(`pip add remove sync lock run tool python venv init build publish tree cache self export version
		help format`),
	"cargo": setOf(`build b check c clean doc d new init add remove rm run r test t bench update search publish
		install uninstall yank owner login logout fix fmt clippy tree vendor metadata package pkgid fetch
		generate-lockfile locate-project report verify-project version help info`),
	"gem": setOf(`build cert check cleanup contents dependency environment env exec fetch generate_index help
		info install list lock mirror open outdated owner pristine push query rdoc rebuild search server signin
		signout sources specification stale uninstall unpack update which yank`),
	"apt": setOf(`install remove purge autoremove autopurge update upgrade full-upgrade dist-upgrade search show
		list source build-dep download clean autoclean check changelog policy depends rdepends satisfy
		edit-sources reinstall mark showsrc`),
	"apt-get": setOf(`install remove purge autoremove autopurge update upgrade dist-upgrade dselect-upgrade source
		build-dep download clean autoclean check changelog satisfy indextargets`),
	"aptitude": setOf(`install remove purge markauto unmarkauto hold unhold update safe-upgrade full-upgrade
		search show clean autoclean download reinstall why why-not forget-new keep keep-all`),
	"yum": setOf(`install remove erase autoremove update upgrade downgrade reinstall search info list provides
		check-update makecache clean history group groupinstall groupremove groupupdate repolist config-manager
		module distro-sync swap mark repoquery deplist shell`),
	"dnf": dnfSubcommands,
	"zypper": setOf(`install in remove rm update up dist-upgrade dup refresh ref search se info if patch patches
		list-updates lu addrepo ar removerepo rr repos lr clean packages pa verify ve`),
	"apk": setOf(`add del fix update upgrade cache info list search fetch audit stats index manifest dot policy
		verify version`),
	"brew": setOf(`install uninstall remove rm reinstall upgrade update list ls info search cleanup doctor tap
		untap link unlink pin unpin services outdated deps uses leaves autoremove bundle config home edit create
		audit fetch`),
	"snap": setOf(`install remove refresh revert list info find enable disable connect disconnect alias unalias
		run services start stop restart logs set get`),
	"flatpak": setOf(`install uninstall remove update list info run search remote-add remote-delete remotes
		override repair`),
	"conda": condaSubcommands,
	"composer": setOf(`install update require remove uninstall dump-autoload show outdated create-project
		run-script run exec global validate config diagnose`),
	"poetry": setOf(`add remove install update lock run shell show build publish new init config check env self source
		sync`),
	"pdm": setOf(`add remove install update lock run sync list show build publish init`),
	"rustup": setOf(`install uninstall toolchain update default target component override self show run which
		doc check`),
	"pulumi": setOf(`about cancel config console convert destroy env gen-completion import install login logout new
		org package plugin policy preview refresh schema stack state up update watch whoami`),
	"aws": setOf(`s3 s3api ec2 iam lambda sts rds dynamodb cloudformation ecs ecr eks logs sqs sns ssm
		secretsmanager kms route53 cloudfront configure organizations glacier elasticache elbv2 autoscaling`),
	"tofu":       terraformSubcommands,
	"mamba":      condaSubcommands,
	"micromamba": condaSubcommands,
	"microdnf":   dnfSubcommands,
	"tdnf":       dnfSubcommands,
}

var (
	terraformSubcommands = setOf(`init validate plan apply destroy console fmt force-unlock get graph import login logout
		metadata output providers refresh show state taint test untaint version workspace modules`)
	condaSubcommands = setOf(`install remove uninstall update upgrade create list info search env clean config activate
		deactivate run compare doctor export notices package rename`)
	dnfSubcommands = setOf(`install remove erase autoremove update upgrade downgrade reinstall search info list provides
		check-update makecache clean history group groupinstall groupremove groupupdate repolist config-manager
		module distro-sync swap mark repoquery deplist shell`)
)
