// What the host-side CLI (`aviary agent`) needs from the guest agent.
export { runAgent, AGENT_FEATURES, AGENT_VERSION, type AgentOptions, type RunningAgent } from './agent.js'
