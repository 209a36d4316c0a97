/**
 * The taskmeter kernel, by area. The five services it is named for are Catalog, Pricer, Ledger,
 * TaskRunner and ChatBilling; each `*Store` is a storage port, implemented by storage-memory and
 * storage-pg and held to the conformance suite in `@taskmeter/kernel/testing`.
 */

// domain: values and errors every area shares
export * as ClientSource from "./domain/ClientSource.ts"
export * as Errors from "./domain/Errors.ts"
export * as Fingerprint from "./domain/Fingerprint.ts"
export * as Ids from "./domain/Ids.ts"
export * as Uuid7 from "./domain/Uuid7.ts"
export * as Money from "./domain/Money.ts"
export * as ProblemList from "./domain/ProblemList.ts"
export * as StorableText from "./domain/StorableText.ts"
export * as StoreError from "./domain/StoreError.ts"
export * as Task from "./domain/Task.ts"
export * as TaskErrorCode from "./domain/TaskErrorCode.ts"
export * as TaskStatus from "./domain/TaskStatus.ts"

// catalog: the models and their input schemas
export * as Catalog from "./catalog/Catalog.ts"
export * as ModelDefinition from "./catalog/ModelDefinition.ts"
export * as ModelField from "./catalog/ModelField.ts"

// pricing: the price list, quotes and daily platform budgets
export * as BudgetStore from "./pricing/BudgetStore.ts"
export * as PriceList from "./pricing/PriceList.ts"
export * as Pricer from "./pricing/Pricer.ts"
export * as PriceStore from "./pricing/PriceStore.ts"
export * as ZeroPriced from "./pricing/ZeroPriced.ts"

// accounts: accounts, API keys and scopes
export * as AccountContacts from "./accounts/AccountContacts.ts"
export * as Accounts from "./accounts/Accounts.ts"
export * as AccountStore from "./accounts/AccountStore.ts"
export * as KeyCheck from "./accounts/KeyCheck.ts"
export * as PresentedCredential from "./accounts/PresentedCredential.ts"
export * as Scope from "./accounts/Scope.ts"

// users: the console's users, their memberships in accounts, sessions, passkeys and one-time email tokens
export * as PasskeyStore from "./users/PasskeyStore.ts"
export * as Passwords from "./users/Passwords.ts"
export * as Sessions from "./users/Sessions.ts"
export * as SessionStore from "./users/SessionStore.ts"
export * as SignInThrottle from "./users/SignInThrottle.ts"
export * as Users from "./users/Users.ts"
export * as UserStore from "./users/UserStore.ts"

// ledger: credits, every change an entry
export * as Ledger from "./ledger/Ledger.ts"
export * as LedgerStore from "./ledger/LedgerStore.ts"

// mail: the one port every outgoing message goes through
export * as Mailer from "./mail/Mailer.ts"

// payments: top-ups through a payment processor, its events into the ledger
export * as PaymentEvent from "./payments/PaymentEvent.ts"
export * as PaymentProcessor from "./payments/PaymentProcessor.ts"
export * as Payments from "./payments/Payments.ts"
export * as PaymentStore from "./payments/PaymentStore.ts"
export * as PaymentWebhook from "./payments/PaymentWebhook.ts"
export * as Reconciliation from "./payments/Reconciliation.ts"
export * as TopUpBounds from "./payments/TopUpBounds.ts"

// tasks: admission, the queue and its workers, the provider interface
export * as AdmissionRules from "./tasks/AdmissionRules.ts"
export * as CallbackUrls from "./tasks/CallbackUrls.ts"
export * as Executors from "./tasks/Executors.ts"
export * as Chores from "./tasks/Chores.ts"
export * as Housekeeping from "./tasks/Housekeeping.ts"
export * as Outputs from "./tasks/Outputs.ts"
export * as Provider from "./tasks/Provider.ts"
export * as Reconciler from "./tasks/Reconciler.ts"
export * as StatusWatchers from "./tasks/StatusWatchers.ts"
export * as TaskEvents from "./tasks/TaskEvents.ts"
export * as TaskRunner from "./tasks/TaskRunner.ts"
export * as TaskStore from "./tasks/TaskStore.ts"
export * as TaskView from "./tasks/TaskView.ts"
export * as TaskWorker from "./tasks/TaskWorker.ts"

// chat: per-token billing of chat completions
export * as ChatBilling from "./chat/ChatBilling.ts"
export * as ChatLeases from "./chat/ChatLeases.ts"
export * as ChatCompletions from "./chat/ChatCompletions.ts"
export * as ChatPrices from "./chat/ChatPrices.ts"
export * as ChatPriceStore from "./chat/ChatPriceStore.ts"
export * as ChatProvider from "./chat/ChatProvider.ts"
export * as ChatStore from "./chat/ChatStore.ts"
export * as ChatTokens from "./chat/ChatTokens.ts"
export * as PullDeadline from "./chat/PullDeadline.ts"
export * as TokenUsage from "./chat/TokenUsage.ts"

// media: uploads, result files and signed links to them
export * as BlobStore from "./media/BlobStore.ts"
export * as MediaReference from "./media/MediaReference.ts"
export * as MediaStore from "./media/MediaStore.ts"
export * as MediaUrls from "./media/MediaUrls.ts"
export * as ResultUrls from "./media/ResultUrls.ts"
export * as Retention from "./media/Retention.ts"

// observability: metrics, the workers' heartbeat, the store's readiness
export * as Heartbeat from "./observability/Heartbeat.ts"
export * as Metrics from "./observability/Metrics.ts"
export * as RequestFacts from "./observability/RequestFacts.ts"
export * as TraceContext from "./observability/TraceContext.ts"
export * as StoreHealth from "./observability/StoreHealth.ts"

// outbound: the one policy for fetching URLs that others chose
export * as AddressPolicy from "./outbound/AddressPolicy.ts"
export * as PublicFetch from "./outbound/PublicFetch.ts"

// webhooks: signed deliveries of task events from a queue every process shares
export * as Backoff from "./webhooks/Backoff.ts"
export * as Signature from "./webhooks/Signature.ts"
export * as WebhookBody from "./webhooks/WebhookBody.ts"
export * as WebhookDelivery from "./webhooks/WebhookDelivery.ts"
export * as WebhookEndpoints from "./webhooks/WebhookEndpoints.ts"
export * as WebhookEvent from "./webhooks/WebhookEvent.ts"
export * as WebhookStore from "./webhooks/WebhookStore.ts"
